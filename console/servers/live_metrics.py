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
import math
import threading
from dataclasses import asdict, dataclass
from typing import TYPE_CHECKING, Any, Iterator

from prometheus_client.parser import text_fd_to_metric_families

from ..bench.prom import KV_CACHE, QUEUED, RUNNING
from ..gpus.ranges import physical

if TYPE_CHECKING:
    import httpx

    from ..hosts import Host

PREEMPTIONS = ("vllm:num_preemptions",)  # a counter: its family name has lost `_total`
TTFT = ("vllm:time_to_first_token_seconds", "sglang:time_to_first_token_seconds")
ITL = ("vllm:inter_token_latency_seconds", "vllm:time_per_output_token_seconds",
       "sglang:inter_token_latency_seconds")
LLAMA_TOKEN_TIME = ("llamacpp:tokens_predicted_seconds", "llamacpp:tokens_predicted")
PREFIXES = {"vllm:": "vllm", "sglang:": "sglang", "llamacpp:": "llama.cpp"}
MAX_PAGE = 8 << 20  # a real page is tens of KB; more than this is not read
MAX_LINE = 64 << 10  # a real line is under 2 KB; one of 64 KB parses in up to 40 ms
READ_S = 3.0         # one read of a page, from connecting to its last line parsed


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

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def read_metrics(text: str, stop: threading.Event | None = None) -> LiveMetrics:
    """Parse one `/metrics` page; ValueError (one line) when it is not Prometheus text.

    `stop`, once set, ends the parse at its next line (a reader that gave up on the page sets
    it): a parse on its own thread cannot be cancelled otherwise. No line may be longer than
    MAX_LINE, so that next line is never far off."""
    if len(text) > MAX_PAGE:
        raise ValueError(f"/metrics page of {len(text)} bytes is larger than {MAX_PAGE} bytes")
    values: dict[str, float] = {}     # family -> summed plain value
    sums: dict[str, float] = {}       # histogram family -> summed _sum
    counts: dict[str, float] = {}     # histogram family -> summed _count
    names: set[str] = set()
    try:
        # the parser only iterates its argument's lines (typed as a file)
        for family in text_fd_to_metric_families(_kept_lines(text, stop)):  # type: ignore[arg-type]
            if not family.name.endswith("_created"):  # a counter's creation time, not a series of its own
                names.add(family.name)
            for sample in family.samples:
                value = _as_float(sample.value)
                if sample.name.endswith("_sum"):
                    sums[family.name] = sums.get(family.name, 0.0) + value
                elif sample.name.endswith("_count"):
                    counts[family.name] = counts.get(family.name, 0.0) + value
                elif not sample.name.endswith(("_bucket", "_created")):
                    values[family.name] = values.get(family.name, 0.0) + value
    except ParseStopped:
        raise
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
    # NaN, ±Inf and 1e308 are Prometheus text too: a value no server can mean is unknown (N/A)
    return LiveMetrics(server=server, families=families, running=physical("running", first(RUNNING)),
                       waiting=physical("waiting", first(QUEUED)),
                       kv_cache_usage=physical("kv_cache", first(KV_CACHE)),
                       preemptions=physical("preemptions", first(PREEMPTIONS)),
                       ttft_mean_ms=physical("latency_ms", mean_ms(TTFT)),
                       itl_mean_ms=physical("latency_ms", itl))


def _as_float(value: float) -> float:
    """A sample's value as a float; an integer too wide for one (`1` and 400 zeros) is infinite,
    which no range takes, so it reads N/A like +Inf."""
    try:
        return float(value)
    except OverflowError:
        return math.inf if value > 0 else -math.inf


class ParseStopped(ValueError):
    """The reader gave up on the page while it was being parsed."""


def _kept_lines(text: str, stop: threading.Event | None) -> Iterator[str]:
    """The page's lines less its `_bucket` and `_created` samples, which nothing here reads: half a
    vLLM page's lines are histogram buckets, and dropping them halves the parse (the Server tab's
    poll reads a page every second). Ends the parse when `stop` is set; refuses an overlong line,
    whose parse alone could take seconds (the parser is quadratic in a line's escapes)."""
    for number, line in enumerate(text.splitlines(keepends=True), 1):
        if stop is not None and stop.is_set():
            raise ParseStopped("/metrics parse stopped: its reader gave up")
        if len(line) > MAX_LINE:
            raise ValueError(f"line {number} is longer than {MAX_LINE} characters")
        name = line.split("{", 1)[0].split(None, 1)[0] if line[0] != "#" and line.strip() else ""
        if not name.endswith(("_bucket", "_created")):
            yield line


async def fetch(host: Host, port: int, timeout: float = READ_S) -> LiveMetrics | str:
    """The live metrics of the server on `port` of `host` (through the SSH tunnel for a remote
    host), or one line saying why there are none; the page is read within `timeout` seconds."""
    from ..hosts import HostError

    try:
        local = await host.forward_port(port)
    except (HostError, OSError) as exc:
        return f"/metrics not reachable: {type(exc).__name__}"
    async with PageReader(timeout) as reader:
        return await reader.read(local)


class PageReader:
    """The one reader of a launch's `/metrics` (the runtime's poll and `server status`): each read,
    from connecting to the page parsed, ends by `deadline_s`, however slowly the server answers.

    httpx's own timeout is per operation, so a server that sends a byte every half second was
    never cut off. A poll reads again and again through one reader: one HTTP client (a new one
    builds a TLS context, about 20 ms of CPU, ten times a read) and one parse at a time. A parse
    runs on a worker thread, which a deadline cannot cancel; the reader tells it to stop instead,
    and starts no other parse until it has."""

    def __init__(self, deadline_s: float = READ_S) -> None:
        self.deadline_s = deadline_s
        self._client: httpx.AsyncClient | None = None
        self._parse_done: threading.Event | None = None   # cleared while a parse runs on its thread

    async def __aenter__(self) -> "PageReader":
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        if self._client is not None:
            await self._client.aclose()
            self._client = None

    @property
    def parsing(self) -> bool:
        """A parse given up on is still ending on its thread."""
        return self._parse_done is not None and not self._parse_done.is_set()

    async def read(self, local_port: int) -> LiveMetrics | str:
        """The metrics on `127.0.0.1:local_port` (a server on this machine, or a tunnel's end),
        or one line saying why there are none."""
        import httpx

        if self.parsing:
            return "/metrics: the last page's parse has not ended yet"
        if self._client is None:
            self._client = httpx.AsyncClient(timeout=self.deadline_s)
        stop = threading.Event()
        try:
            async with asyncio.timeout(self.deadline_s):   # keeps a cancel that lands with the page (wait_for on 3.11 drops it)
                return await self._read(self._client, f"http://127.0.0.1:{local_port}/metrics", stop)
        except TimeoutError:
            return f"/metrics did not answer within {self.deadline_s:g}s"
        except (httpx.HTTPError, OSError) as exc:
            return f"/metrics not reachable: {type(exc).__name__}"
        finally:
            stop.set()  # a parse still running on its thread ends at its next line

    async def _read(self, client: httpx.AsyncClient, url: str, stop: threading.Event) -> LiveMetrics | str:
        async with client.stream("GET", url, timeout=self.deadline_s) as response:
            if response.status_code != 200:
                return f"/metrics answered HTTP {response.status_code}"
            body = bytearray()
            async for chunk in response.aiter_bytes():
                body += chunk
                if len(body) > MAX_PAGE:
                    return f"/metrics page larger than {MAX_PAGE} bytes"
        done = self._parse_done = threading.Event()

        def parse() -> LiveMetrics:
            try:
                return read_metrics(body.decode("utf-8", errors="replace"), stop)
            finally:
                done.set()
        try:  # a 50 KB vLLM page takes about 6 ms to parse, a page at the cap about a second: off the loop
            return await asyncio.to_thread(parse)
        except ValueError as exc:
            return str(exc)
        except Exception as exc:  # noqa: BLE001 - a page no parse foresaw must not end the poll
            return f"/metrics could not be read ({type(exc).__name__})"


def summary_line(doc: dict[str, Any]) -> str:
    """A launch's `/metrics` view (LiveMetrics.to_json, or {"unavailable": why}) in one line."""
    from ..fmt import number

    if "unavailable" in doc:
        return f"metrics: {doc['unavailable']}"
    kv = doc.get("kv_cache_usage")
    return (f"{doc.get('server') or 'server'} metrics: running {number(doc.get('running'), 0)} · "
            f"waiting {number(doc.get('waiting'), 0)} · KV cache {number(None if kv is None else kv * 100, 1, '%')} · "
            f"preemptions {number(doc.get('preemptions'), 0)} · TTFT mean {number(doc.get('ttft_mean_ms'), 1, ' ms')} · "
            f"ITL mean {number(doc.get('itl_mean_ms'), 1, ' ms')}")
