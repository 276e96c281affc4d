"""The server's own view, from its Prometheus `/metrics`, beside the client's numbers.

Metric names differ by server; the first name found in each list wins.
Generation throughput is the rate of the generated-tokens counter between two
scrapes, or the server's own gauge when it has no counter. Every value a
server does not expose stays None.
"""
from __future__ import annotations

import time
from dataclasses import dataclass

import httpx
from prometheus_client.parser import text_string_to_metric_families

from console.gpus.ranges import physical

# Counters lose their `_total` suffix in the parser's family names.
GEN_TOKENS_COUNTER = ("vllm:generation_tokens", "sglang:generation_tokens", "llamacpp:tokens_predicted")
GEN_TPS_GAUGE = ("sglang:gen_throughput",)
RUNNING = ("vllm:num_requests_running", "sglang:num_running_reqs", "llamacpp:requests_processing")
QUEUED = ("vllm:num_requests_waiting", "sglang:num_queue_reqs", "llamacpp:requests_deferred")
KV_CACHE = ("vllm:kv_cache_usage_perc", "vllm:gpu_cache_usage_perc", "sglang:token_usage",
            "llamacpp:kv_cache_usage_ratio")
PREEMPTIONS = ("vllm:num_preemptions",)   # a counter: requests pushed back out of the batch


@dataclass
class ServerSample:
    at: float
    gen_tokens_total: float | None
    gen_tps_gauge: float | None
    running: float | None
    queued: float | None
    kv_cache: float | None          # 0..1
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

    return ServerSample(
        at=time.monotonic() if at is None else at,
        gen_tokens_total=first(GEN_TOKENS_COUNTER),
        gen_tps_gauge=first(GEN_TPS_GAUGE),
        running=first(RUNNING),
        queued=first(QUEUED),
        kv_cache=first(KV_CACHE),
        preemptions=first(PREEMPTIONS),
    )


def server_view(previous: ServerSample | None, current: ServerSample) -> dict:
    """The tick's `server` object from two consecutive samples; impossible values are None (N/A)."""
    gen_tps = current.gen_tps_gauge
    now_total = physical("gen_tokens_total", current.gen_tokens_total)
    then_total = physical("gen_tokens_total", previous.gen_tokens_total) if previous is not None else None
    if now_total is not None and then_total is not None and current.at > previous.at:
        delta = now_total - then_total
        if delta >= 0:  # a counter that went down means the server restarted
            gen_tps = delta / (current.at - previous.at)
    return {"gen_tps": physical("gen_tps", gen_tps), "running": physical("running", current.running),
            "queued": physical("queued", current.queued), "kv_cache": physical("kv_cache", current.kv_cache)}


class Scraper:
    """Polls /metrics; gives up quietly (None) when the server has none."""

    def __init__(self, client: httpx.AsyncClient, on_sample=None):
        self.client = client
        self.on_sample = on_sample   # (view, sample, sent at) after each scrape: the run's timeline records it
        self.available: bool | None = None
        self.previous: ServerSample | None = None
        self.latest: dict | None = None

    async def scrape(self, timeout: float = 2.0) -> dict | None:
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
        view = server_view(self.previous, sample)
        self.previous = sample
        self.latest = view
        if self.on_sample is not None:
            self.on_sample(view, sample, sent)
        return view
