"""The simulator's `/metrics`: sglang's Prometheus metric names, one registry per server.

Names and label (`model_name`) follow what a real sglang server exports with
`--enable-metrics`, so gpudeck's scraper reads the simulator exactly as it
reads sglang.
"""
from __future__ import annotations

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST

TTFT_BUCKETS = (0.001, 0.005, 0.01, 0.02, 0.04, 0.06, 0.08, 0.1, 0.25, 0.5, 0.75, 1.0, 2.5, 5.0,
                7.5, 10.0, 15.0, 20.0, 25.0, 30.0)
E2E_BUCKETS = (0.3, 0.5, 0.8, 1.0, 1.5, 2.0, 2.5, 5.0, 10.0, 15.0, 20.0, 30.0, 40.0, 50.0, 60.0,
               90.0, 120.0, 240.0)
TPOT_BUCKETS = (0.005, 0.01, 0.015, 0.02, 0.025, 0.03, 0.04, 0.05, 0.075, 0.1, 0.15, 0.2, 0.3,
                0.4, 0.5, 0.75, 1.0, 2.5)

CONTENT_TYPE = CONTENT_TYPE_LATEST


class SimMetrics:
    def __init__(self, model_name: str, max_total_tokens: int, max_running_requests: int):
        self.registry = CollectorRegistry(auto_describe=True)
        reg, labels = self.registry, ["model_name"]

        def gauge(name: str, doc: str) -> Gauge:
            return Gauge(name, doc, labels, registry=reg).labels(model_name)

        self.prompt_tokens = Counter("sglang:prompt_tokens", "Number of prefill tokens processed.",
                                     labels, registry=reg).labels(model_name)
        self.generation_tokens = Counter("sglang:generation_tokens", "Number of generation tokens processed.",
                                         labels, registry=reg).labels(model_name)
        self.num_requests = Counter("sglang:num_requests", "The number of processed requests.",
                                    labels, registry=reg).labels(model_name)
        self.num_running_reqs = gauge("sglang:num_running_reqs", "The number of running requests.")
        self.num_queue_reqs = gauge("sglang:num_queue_reqs", "The number of requests in the waiting queue.")
        self.num_used_tokens = gauge("sglang:num_used_tokens", "The number of used tokens.")
        self.token_usage = gauge("sglang:token_usage", "The token usage.")
        self.gen_throughput = gauge("sglang:gen_throughput", "The generation throughput (token/s).")
        self.cache_hit_rate = gauge("sglang:cache_hit_rate", "The prefix cache hit rate.")
        self.max_total_num_tokens = gauge("sglang:max_total_num_tokens", "Maximum total number of tokens.")
        self.max_running_requests = gauge("sglang:max_running_requests", "Maximum running requests.")
        self.ttft = Histogram("sglang:time_to_first_token_seconds", "Histogram of time to first token in seconds.",
                              labels, buckets=TTFT_BUCKETS, registry=reg).labels(model_name)
        self.e2e = Histogram("sglang:e2e_request_latency_seconds",
                             "Histogram of end-to-end request latency in seconds.",
                             labels, buckets=E2E_BUCKETS, registry=reg).labels(model_name)
        self.tpot = Histogram("sglang:time_per_output_token_seconds",
                              "Histogram of time per output token in seconds.",
                              labels, buckets=TPOT_BUCKETS, registry=reg).labels(model_name)
        self.inter_token = Histogram("sglang:inter_token_latency_seconds",
                                     "Histogram of inter-token latency in seconds.",
                                     labels, buckets=TPOT_BUCKETS, registry=reg).labels(model_name)
        self.max_total_num_tokens.set(max_total_tokens)
        self.max_running_requests.set(max_running_requests)
        self.cache_hit_rate.set(0.0)

    def render(self) -> bytes:
        return generate_latest(self.registry)
