"""The host runtime reads every live launch's own `/metrics` and says so in ServerMetricsSampled
events: against a real llama-server (`--metrics`), locally and through the SSH tunnel, and
marked stale once that server stops answering."""
from __future__ import annotations

import asyncio
import time

import httpx
import pytest

from console.runtime import events as ev
from console.runtime.host_runtime import HostRuntime
from console.store import launches as records
from console.session import HostSession
from profiles import store
from tests.realparts import start_llama_server
from widgets.server_metrics import is_stale, metrics_line

POLL_S = 0.2
EVENT_WAIT_S = 30.0  # a guard against a hang, not a measure: each wait ends on the event


class Events:
    """A runtime's ServerMetricsSampled events, in order, for the tests to wait on."""

    def __init__(self, runtime: HostRuntime) -> None:
        self.queue: asyncio.Queue = asyncio.Queue()
        runtime.subscribe(lambda e: self.queue.put_nowait(e) if isinstance(e, ev.ServerMetricsSampled) else None)

    async def next(self, predicate, what: str) -> ev.ServerMetricsSampled:
        async def find():
            while True:
                event = await self.queue.get()
                if predicate(event):
                    return event
        try:
            return await asyncio.wait_for(find(), EVENT_WAIT_S)
        except asyncio.TimeoutError:
            pytest.fail(f"no ServerMetricsSampled event with {what}", pytrace=False)


def _ready_launch(profile: str, server, record_id: str) -> records.LaunchRecord:
    """A ready launch record for a llama-server this test started (its own process group)."""
    pid = server.proc.pid
    record = records.LaunchRecord(id=record_id, config="smol", script=None, log=str(server.log), exit_file=None,
                                  pid=pid, pgid=pid, port=server.port, state="ready", ready_at=time.time())
    records.save(profile, record)
    return record


@pytest.mark.parametrize("over", ["local", "ssh"])
async def test_a_live_llama_server_is_polled_and_its_unknown_fields_stay_unknown(llama_server, request, over):
    profile = request.getfixturevalue("ssh_profile") if over == "ssh" else store.load("local")
    body = {"prompt": "The capital of France is", "n_predict": 8, "temperature": 0}
    assert httpx.post(f"{llama_server.url}/completion", json=body, timeout=60).status_code == 200
    runtime = HostRuntime(HostSession.open(profile), metrics_poll_s=POLL_S)
    events = Events(runtime)
    try:
        record = runtime.watch(_ready_launch(profile.name, llama_server, f"smol-{over}")).record
        event = await events.next(lambda e: not e.stale, "a fresh reading")
        assert (event.profile, event.record_id, event.config) == (profile.name, record.id, "smol")
        got = event.metrics
        assert got.server == "llama.cpp" and got.families > 0
        assert got.running == 0 and got.waiting == 0              # llamacpp:requests_processing / _deferred
        assert got.itl_mean_ms > 0                                # tokens_predicted_seconds / tokens_predicted
        # llama.cpp has no TTFT histogram, no KV-cache ratio on this build and no preemption counter
        assert got.ttft_mean_ms is None and got.kv_cache_usage is None and got.preemptions is None
        assert event.taken_at is not None and event.error is None
        assert runtime.server_metrics[record.id] is event        # what a Server tab opened later draws

        line = metrics_line(event, event.polled_at).plain
        assert line.startswith("llama.cpp /metrics · running 0 · waiting 0 · KV N/A · preempt N/A · TTFT N/A · ITL ")
        assert "STALE" not in line and "ITL N/A" not in line
    finally:
        await runtime.close()


async def test_a_live_vllm_is_polled_with_every_field_known(vllm_server):
    """The real vLLM (CPU build) after one request: every field of the line is its own series."""
    body = {"model": "smol", "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}
    assert httpx.post(f"{vllm_server.url}/v1/completions", json=body, timeout=120).status_code == 200
    runtime = HostRuntime(HostSession.open(store.load("local")), metrics_poll_s=POLL_S)
    events = Events(runtime)
    try:
        runtime.watch(_ready_launch("local", vllm_server, "vllm-poll"))
        event = await events.next(lambda e: not e.stale, "a fresh reading")
        got = event.metrics
        assert got.server == "vllm" and got.families >= 30
        assert got.running == 0 and got.waiting == 0 and got.preemptions == 0 and 0 <= got.kv_cache_usage <= 1
        assert got.ttft_mean_ms > 0 and got.itl_mean_ms > 0
        assert "N/A" not in metrics_line(event, event.polled_at).plain
    finally:
        await runtime.close()


async def test_a_stopped_server_turns_its_reading_stale_and_the_poll_ends(tmp_path):
    server = start_llama_server(tmp_path / "llama-server.log")
    runtime = HostRuntime(HostSession.open(store.load("local")), metrics_poll_s=POLL_S)
    events = Events(runtime)
    try:
        record = runtime.watch(_ready_launch("local", server, "smol-stop")).record
        fresh = await events.next(lambda e: not e.stale, "a fresh reading")
        assert "STALE" not in metrics_line(fresh, fresh.polled_at).plain

        await asyncio.to_thread(server.stop)
        stale = await events.next(lambda e: e.stale, "the reading marked stale")
        assert stale.metrics is not None and stale.metrics.server == "llama.cpp"  # the last values stay shown
        assert stale.taken_at <= stale.polled_at and stale.error
        line = metrics_line(stale, stale.polled_at).plain
        assert "STALE read " in line and line.startswith("llama.cpp /metrics · running 0")

        # the monitor sees the process gone; the poll says so once more and stops
        ended = await events.next(lambda e: e.error and e.error.startswith("server "), "the server's end")
        assert ended.stale and ended.error == f"server {record.state}" and not record.live
        await asyncio.wait_for(runtime._tasks[f"metrics-{record.id}"], EVENT_WAIT_S)
    finally:
        await runtime.close()
        server.stop()


def test_an_old_reading_is_stale_without_a_new_event():
    """If no poll renews it (the poller itself stuck), the reading's age alone makes it STALE."""
    from console.servers.live_metrics import read_metrics
    from tests.test_live_metrics import BENCH

    metrics = read_metrics((BENCH / "vllm_cpu_0.32_metrics.txt").read_text())
    event = ev.ServerMetricsSampled("p", "r", "c", metrics, taken_at=100.0, polled_at=100.0, stale=False,
                                    stale_after_s=3.0)
    assert not is_stale(event, 102.0)
    assert metrics_line(event, 102.0).plain == (
        "vllm /metrics · running 0 · waiting 0 · KV 0% · preempt 0 · TTFT 149 ms · ITL 44 ms")
    assert is_stale(event, 104.0) and "STALE read " in metrics_line(event, 104.0).plain
