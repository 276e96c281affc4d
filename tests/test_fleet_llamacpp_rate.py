"""The fleet view's llama.cpp rate is unknown while requests run, never a 0 from a counter that waits.

llama.cpp adds a request's generated tokens to `llamacpp:tokens_predicted_total` only when the
request finishes, so through a long request the counter's rate over a minute reads 0 while the
server generates flat out. A real llama-server (one slot, a long streamed request in flight) is
scraped by a real Prometheus; the fleet reads the row with one request running and its rate
unknown ("at finish" in the table), and once the server is idle again with a finished request
counted, a rate.
"""
from __future__ import annotations

import threading
import time

import httpx
import pytest

from console.gpus.prometheus import PrometheusFleet, PromSettings
from tests.prometheus_part import Prometheus
from tests.realparts import start_llama_server
from widgets.fleet_servers import server_cells

pytestmark = pytest.mark.slow


def _holds(url: str, expr: str, test) -> float:
    """Until Prometheus's answer to `expr` has one value that passes `test` (it scrapes every second)."""
    deadline = time.monotonic() + 60
    while True:
        result = httpx.get(url + "/api/v1/query", params={"query": expr}, timeout=10).json()["data"]["result"]
        if len(result) == 1 and test(float(result[0]["value"][1])):
            return float(result[0]["value"][1])
        assert time.monotonic() < deadline, f"Prometheus never held {expr} as wanted: {result}"
        time.sleep(0.2)


class LongRequest(threading.Thread):
    """A streamed completion of thousands of tokens, read until `stop` is set (then dropped)."""

    def __init__(self, url: str) -> None:
        super().__init__(daemon=True)
        self.url, self.started, self.stop, self.finished = url, threading.Event(), threading.Event(), False

    def run(self) -> None:
        body = {"prompt": "Once upon a time", "n_predict": 7000, "ignore_eos": True, "stream": True}
        with httpx.stream("POST", self.url + "/completion", json=body, timeout=120) as response:
            for _chunk in response.iter_bytes():
                self.started.set()
                if self.stop.is_set():
                    return
        self.finished = True


async def test_a_long_request_in_flight_leaves_the_rate_unknown(tmp_path):
    server = start_llama_server(tmp_path / "llama.log", "-np", "1", "-c", "8192")
    prom = Prometheus(tmp_path / "prom", [f"127.0.0.1:{server.port}"]).start()
    request = LongRequest(server.url)
    fleet = PrometheusFleet(PromSettings(url=prom.url))
    try:
        prom.wait_up(1)
        request.start()
        assert request.started.wait(60), "the long request never streamed a token"
        _holds(prom.url, "llamacpp:requests_processing", lambda v: v == 1)
        _holds(prom.url, "count_over_time(llamacpp:tokens_predicted_total[1m])", lambda v: v >= 2)
        assert _holds(prom.url, "rate(llamacpp:tokens_predicted_total[1m])", lambda v: True) == 0  # what it reads

        sample = await fleet.sample()
        assert not request.finished, "the request ended before the fleet was read: make it longer"
        (row,) = [r for r in sample.servers if r.family == "llamacpp"]
        assert row.running == 1 and row.gen_tok_s is None and row.counted_at_request_end
        assert row.to_json()["gen_tok_s"] is None and row.to_json()["gen_tok_s_counted"] == "at request end"
        assert server_cells(row)[-1].plain == "at finish"

        request.stop.set()
        request.join(30)
        httpx.post(server.url + "/completion", json={"prompt": "Hello", "n_predict": 16}, timeout=60)
        _holds(prom.url, "llamacpp:requests_processing", lambda v: v == 0)
        _holds(prom.url, "rate(llamacpp:tokens_predicted_total[1m])", lambda v: v > 0)
        fleet._servers_at = float("-inf")    # the server rows are asked every few seconds: now
        (idle,) = [r for r in (await fleet.sample()).servers if r.family == "llamacpp"]
        assert idle.running == 0 and idle.gen_tok_s is not None and idle.gen_tok_s > 0
    finally:
        request.stop.set()
        await fleet.close()
        prom.stop()
        server.stop()
