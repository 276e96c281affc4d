"""What a running server says of itself on its Prometheus `/metrics`, in one shape for every server.

vLLM's `vllm:` series, sglang's `sglang:` and llama.cpp's `llamacpp:` name the
same things differently; each field takes the first name found. Latency means
come from the server's histograms (sum / count since it started), so they are
the server's view to set beside what gpudeck's client measures. llama.cpp has
no latency histograms: its mean time per generated token
(`tokens_predicted_seconds_total / tokens_predicted_total`) stands for ITL, and
its TTFT stays unknown. Anything a server does not expose stays None (shown N/A).
"""
from __future__ import annotations

import asyncio
from dataclasses import asdict, dataclass

from prometheus_client.parser import text_string_to_metric_families

from ..bench.prom import KV_CACHE, QUEUED, RUNNING

PREEMPTIONS = ("vllm:num_preemptions",)  # a counter: its family name has lost `_total`
TTFT = ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds")
ITL = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
       "sglang:inter_token_latency_seconds")
LLAMA_TOKEN_TIME = ("llamacpp:tokens_predicted_seconds", "llamacpp:tokens_predicted")
PREFIXES = {"vllm:": "vllm", "sglang:": "sglang", "llamacpp:": "llama.cpp"}
MAX_PAGE = 8 << 20  # a real page is tens of KB; more than this is not read


@dataclass
class LiveMetrics:
    server: str | None          # vllm | sglang | llama.cpp, from the series' prefix
    families: int               # how many of that server's metric families the page has
    running: float | None
    waiting: float | None
    kv_cache_usage: float | None   # 0..1
    preemptions: float | None      # total since the server started
    ttft_mean_ms: float | None
    itl_mean_ms: float | None

    def to_json(self) -> dict:
        return asdict(self)


def read_metrics(text: str) -> LiveMetrics:
    """Parse one `/metrics` page; ValueError (one line) when it is not Prometheus text."""
    if len(text) > MAX_PAGE:
        raise ValueError(f"/metrics page of {len(text)} bytes is larger than {MAX_PAGE} bytes")
    values: dict[str, float] = {}     # family -> summed plain value
    sums: dict[str, float] = {}       # histogram family -> summed _sum
    counts: dict[str, float] = {}     # histogram family -> summed _count
    names: set[str] = set()
    try:
        for family in text_string_to_metric_families(_without_ignored_samples(text)):
            if not family.name.endswith("_created"):  # a counter's creation time, not a series of its own
                names.add(family.name)
            for sample in family.samples:
                value = float(sample.value)
                if sample.name.endswith("_sum"):
                    sums[family.name] = sums.get(family.name, 0.0) + value
                elif sample.name.endswith("_count"):
                    counts[family.name] = counts.get(family.name, 0.0) + value
                elif not sample.name.endswith(("_bucket", "_created")):
                    values[family.name] = values.get(family.name, 0.0) + value
    except (ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"/metrics is not Prometheus text: {str(exc)[:120]}") from None

    def first(candidates: tuple[str, ...]) -> float | None:
        return next((values[n] for n in candidates if n in values), None)

    def mean_ms(candidates: tuple[str, ...]) -> float | None:
        for name in candidates:
            if counts.get(name):
                return sums.get(name, 0.0) / counts[name] * 1000.0
        return None

    server = None
    families = 0
    for prefix, label in PREFIXES.items():
        count = sum(1 for n in names if n.startswith(prefix))
        if count > families:
            server, families = label, count
    itl = mean_ms(ITL)
    seconds, tokens = (values.get(n) for n in LLAMA_TOKEN_TIME)
    if itl is None and seconds is not None and tokens:
        itl = seconds / tokens * 1000.0
    return LiveMetrics(server=server, families=families, running=first(RUNNING), waiting=first(QUEUED),
                       kv_cache_usage=first(KV_CACHE), preemptions=first(PREEMPTIONS),
                       ttft_mean_ms=mean_ms(TTFT), itl_mean_ms=itl)


def _without_ignored_samples(text: str) -> str:
    """The page less its `_bucket` and `_created` samples, which nothing here reads: half a vLLM
    page's lines are histogram buckets, and dropping them halves the parse (the Server tab's
    poll reads a page every second)."""
    def ignored(line: str) -> bool:
        name = line.split("{", 1)[0].split(None, 1)[0] if line and line[0] != "#" and line.strip() else ""
        return name.endswith(("_bucket", "_created"))
    return "".join(line for line in text.splitlines(keepends=True) if not ignored(line))


async def fetch(host, port: int, timeout: float = 3.0, client=None) -> LiveMetrics | str:
    """The live metrics of the server on `port` of `host` (through the SSH tunnel for a remote
    host), or one line saying why there are none."""
    from ..hosts import HostError

    try:
        local = await host.forward_port(port)
    except (HostError, OSError) as exc:
        return f"/metrics not reachable: {type(exc).__name__}"
    return await read_local(local, timeout, client)


async def read_local(local_port: int, timeout: float = 3.0, client=None) -> LiveMetrics | str:
    """The metrics on `127.0.0.1:local_port` (a server on this machine, or a tunnel's end).

    A caller that reads again and again passes its own `httpx.AsyncClient`: a new client
    builds a TLS context each time, about 20 ms of CPU, ten times a read."""
    import httpx

    url = f"http://127.0.0.1:{local_port}/metrics"
    try:
        if client is not None:
            return await _read_page(client, url, timeout)
        async with httpx.AsyncClient(timeout=timeout) as own:
            return await _read_page(own, url, timeout)
    except (httpx.HTTPError, OSError) as exc:
        return f"/metrics not reachable: {type(exc).__name__}"


async def _read_page(client, url: str, timeout: float) -> LiveMetrics | str:
    async with client.stream("GET", url, timeout=timeout) as response:
        if response.status_code != 200:
            return f"/metrics answered HTTP {response.status_code}"
        body = bytearray()
        async for chunk in response.aiter_bytes():
            body += chunk
            if len(body) > MAX_PAGE:
                return f"/metrics page larger than {MAX_PAGE} bytes"
    try:  # a 50 KB vLLM page takes about 6 ms to parse, a page at the cap about a second: off the loop
        return await asyncio.to_thread(read_metrics, body.decode("utf-8", errors="replace"))
    except ValueError as exc:
        return str(exc)


def summary_line(doc: dict) -> str:
    """A launch's `/metrics` view (LiveMetrics.to_json, or {"unavailable": why}) in one line."""
    from ..fmt import number

    if "unavailable" in doc:
        return f"metrics: {doc['unavailable']}"
    kv = doc.get("kv_cache_usage")
    return (f"{doc.get('server') or 'server'} metrics: running {number(doc.get('running'), 0)} · "
            f"waiting {number(doc.get('waiting'), 0)} · KV cache {number(None if kv is None else kv * 100, 1, '%')} · "
            f"preemptions {number(doc.get('preemptions'), 0)} · TTFT mean {number(doc.get('ttft_mean_ms'), 1, ' ms')} · "
            f"ITL mean {number(doc.get('itl_mean_ms'), 1, ' ms')}")
