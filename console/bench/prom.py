"""The server's own view, from its Prometheus `/metrics`, beside the client's numbers.

Metric names differ by server; the first name found in each list wins. Every
value a server does not expose stays None.

Two views. Each tick (about a second) shows the gauges as they are now, and
the generation rate as the difference of the generated-tokens counter between
two scrapes, or the server's own gauge when it has no counter. A level's record
is the whole level: the counter's difference from a scrape before its first
request to one after its last, over the level's duration, and the mean number
of requests the server ran.

llama.cpp counts generated tokens when a request finishes
(`llamacpp:tokens_predicted_total` jumps by a whole request's tokens), so a
difference between two scrapes inside a level is not a rate: its tick rate is
None (N/A), and only the level's average means something. Its
`predicted_tokens_seconds` gauge is no server rate either: it is decode steps
over the summed generation time of the requests that finished since the last
scrape (one request's speed, read and reset by every scrape, 0 when none
finished). Its `requests_processing` is the slots busy at the instant of the
scrape; the level's figure is the mean busy slots per decode call
(`n_busy_slots_per_decode` x `n_decode_total`, differenced over the level).
"""
from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field

import httpx
from prometheus_client.parser import text_string_to_metric_families

from console.gpus.ranges import physical
from console.store.runs import PER_STEP_RUNNING

# Counters lose their `_total` suffix in the parser's family names.
GEN_TOKENS_COUNTER = ("vllm:generation_tokens", "sglang:generation_tokens", "llamacpp:tokens_predicted")
COUNTED_AT_REQUEST_END = ("llamacpp:tokens_predicted",)   # moves by a whole request at its end, not per token
GEN_TPS_GAUGE = ("sglang:gen_throughput",)
RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing")
QUEUED = ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred")
KV_CACHE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage",
            "llamacpp:kv_cache_usage_ratio")
DECODE_CALLS = ("llamacpp:n_decode",)                      # llama_decode() calls since the server started
BUSY_PER_DECODE = ("llamacpp:n_busy_slots_per_decode",)    # busy slots per decode call, mean since start
PREEMPTIONS = ("vllm:num_preemptions",)   # a counter: requests pushed back out of the batch


@dataclass
class ServerSample:
    at: float
    gen_tokens_total: float | None
    gen_tps_gauge: float | None
    running: float | None
    queued: float | None
    kv_cache: float | None          # 0..1
    counted_at_request_end: bool = False   # the token counter moves when requests finish (llama.cpp)
    decode_calls: float | None = None
    busy_per_decode: float | None = None
    preemptions: float | None = None  # the server's preemption counter, since it started


def parse_metrics(text: str, at: float | None = None) -> ServerSample:
    """The values gpudeck shows, summed over label sets (several engines, several models)."""
    sums: dict[str, float] = {}
    for family in text_string_to_metric_families(text):
        for sample in family.samples:
            if sample.name.endswith(("_created", "_bucket", "_count", "_sum")):
                continue
            name = family.name
            sums[name] = sums.get(name, 0.0) + float(sample.value)

    def first(names: tuple[str, ...]) -> float | None:
        for name in names:
            if name in sums:
                return sums[name]
        return None

    counter = next((name for name in GEN_TOKENS_COUNTER if name in sums), None)
    return ServerSample(
        at=time.monotonic() if at is None else at,
        gen_tokens_total=first(GEN_TOKENS_COUNTER),
        gen_tps_gauge=first(GEN_TPS_GAUGE),
        running=first(RUNNING),
        queued=first(QUEUED),
        kv_cache=first(KV_CACHE),
        counted_at_request_end=counter in COUNTED_AT_REQUEST_END,
        decode_calls=first(DECODE_CALLS),
        busy_per_decode=first(BUSY_PER_DECODE),
        preemptions=first(PREEMPTIONS),
    )


def server_view(previous: ServerSample | None, current: ServerSample) -> dict:
    """The tick's `server` object from two consecutive samples; impossible values are None (N/A).
    A counter that moves only when requests finish gives no tick rate (llama.cpp): None."""
    gen_tps = current.gen_tps_gauge
    if not current.counted_at_request_end:
        rate = _counter_rate(previous, current)
        gen_tps = rate if rate is not None else gen_tps
    return {"gen_tps": physical("gen_tps", gen_tps), "running": physical("running", current.running),
            "queued": physical("queued", current.queued), "kv_cache": physical("kv_cache", current.kv_cache)}


def level_view(start: ServerSample | None, end: ServerSample | None, during: list[ServerSample],
               duration_s: float | None) -> dict | None:
    """The level's `server` object: what the server did over the whole level, not at its last second.

    gen_tps: generated tokens the server counted from before the level's first request to after
    its last, over the level's duration (the counter's average, right whenever it moves); None
    without both scrapes. running: llama.cpp's mean busy slots per decode call over the level, else
    the mean of the running gauge over the level's scrapes. queued and kv_cache: the most seen."""
    if end is None:
        return None
    seen = [s for s in (*during, end) if s.at >= (start.at if start is not None else float("-inf"))]
    gen_tokens = None
    if start is not None:
        now, then = (physical("gen_tokens_total", s.gen_tokens_total) for s in (end, start))
        if now is not None and then is not None and now >= then:   # a counter that went down: a restart
            gen_tokens = now - then
    span = duration_s if duration_s and duration_s > 0 else (end.at - start.at if start is not None else None)
    gen_tps = gen_tokens / span if gen_tokens is not None and span and span > 0 else None
    if gen_tps is None and not end.counted_at_request_end and end.gen_tps_gauge is not None:
        gauges = [s.gen_tps_gauge for s in seen if s.gen_tps_gauge is not None]
        gen_tps = sum(gauges) / len(gauges)
    running, basis = _busy_per_decode(start, end), PER_STEP_RUNNING
    if running is None:
        values = [s.running for s in seen if s.running is not None]
        running, basis = (sum(values) / len(values) if values else None), "mean of the level's scrapes"
    return {"gen_tps": physical("gen_tps", gen_tps), "gen_tokens": gen_tokens,
            "running": physical("running", running), "running_is": basis if running is not None else None,
            "queued": physical("queued", _most(s.queued for s in seen)),
            "kv_cache": physical("kv_cache", _most(s.kv_cache for s in seen)), "over": "level"}


def _counter_rate(previous: ServerSample | None, current: ServerSample) -> float | None:
    now_total = physical("gen_tokens_total", current.gen_tokens_total)
    then_total = physical("gen_tokens_total", previous.gen_tokens_total) if previous is not None else None
    if previous is not None and now_total is not None and then_total is not None and current.at > previous.at:
        delta = now_total - then_total
        if delta >= 0:  # a counter that went down means the server restarted
            return delta / (current.at - previous.at)
    return None


def _busy_per_decode(start: ServerSample | None, end: ServerSample) -> float | None:
    """llama.cpp's busy slots per decode call over the level, from its two running means."""
    if start is None or None in (start.decode_calls, start.busy_per_decode, end.decode_calls, end.busy_per_decode):
        return None
    calls = end.decode_calls - start.decode_calls   # type: ignore[operator]
    if calls <= 0:
        return None
    busy = end.busy_per_decode * end.decode_calls - start.busy_per_decode * start.decode_calls  # type: ignore[operator]
    return max(0.0, busy / calls)


def _most(values) -> float | None:
    known = [v for v in values if v is not None]
    return max(known) if known else None


@dataclass
class Scraper:
    """Polls /metrics; gives up quietly (None) when the server has none."""

    client: httpx.AsyncClient
    available: bool | None = None
    previous: ServerSample | None = None
    latest: dict | None = None
    level_start: ServerSample | None = None
    level_samples: list[ServerSample] = field(default_factory=list)
    on_sample: Callable[[dict, ServerSample, float], None] | None = None   # (view, sample, sent at) after each reading: the run's timeline records it

    async def scrape(self, timeout: float = 2.0) -> dict | None:
        sample = await self._sample(timeout)
        if sample is None:
            return None
        view = server_view(self.previous, sample)
        self.previous = sample
        self.latest = view
        self.level_samples.append(sample)
        return view

    async def begin_level(self, timeout: float = 2.0) -> None:
        """The scrape before a level's first request, which its average starts from."""
        self.level_samples = []
        self.level_start = await self._sample(timeout)
        if self.level_start is not None:
            self.previous = self.level_start

    async def end_level(self, duration_s: float | None, timeout: float = 2.0, scrape: bool = True) -> dict | None:
        """One scrape after the level's last request (unless `scrape` is false: a stop, nothing answered),
        and the level's view; None when the server has no metrics."""
        end = await self._sample(timeout) if scrape else None
        if end is not None:
            self.latest = server_view(self.previous, end)
            self.previous = end
        elif self.level_samples:
            end = self.level_samples[-1]
        return level_view(self.level_start, end, self.level_samples, duration_s)

    async def _sample(self, timeout: float) -> ServerSample | None:
        if self.available is False:
            return None
        try:
            sent = time.perf_counter()
            resp = await self.client.get("/metrics", timeout=timeout)
            if resp.status_code != 200:
                self.available = self.available or False
                return None
            sample = parse_metrics(resp.text)
        except (httpx.HTTPError, ValueError):
            self.latest = None
            return None
        if sample.gen_tokens_total is None and sample.running is None and sample.gen_tps_gauge is None:
            self.available = False
            return None
        self.available = True
        if self.on_sample is not None:
            self.on_sample(server_view(self.previous, sample), sample, sent)
        return sample
