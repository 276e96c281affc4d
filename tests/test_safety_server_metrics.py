"""A launch's own `/metrics` is hostile input (issue 39: the trickle, the values, the slow parse).

The server is tests/prom_peer.py, a real HTTP server on 127.0.0.1 serving the page
each test sets, or trickling one byte every half second. `gpudeck server status`
and the runtime's poll read it through one reader with an overall deadline; a
value no server can mean reads N/A; a page whose parse outlives the deadline is
given up on, and its parse stops, one at a time.
"""
from __future__ import annotations

import asyncio
import json
import subprocess
import threading
import time
from types import SimpleNamespace

import pytest

from console.runtime import events as ev
from console.servers import live_metrics
from console.store import launches
from tests.cli import gpudeck
from tests.prom_peer import PromPeer
from widgets.server_metrics import metrics_line

TRICKLE_S = 0.5   # one byte every half second: never trips a per-read timeout


@pytest.fixture
def peer():
    server = PromPeer()
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def ready_launch(peer):
    """A ready launch record whose port is the peer's (its process a sleeper in its own group)."""
    sleeper = subprocess.Popen(["sleep", "300"], start_new_session=True)
    port = int(peer.url.rsplit(":", 1)[1])
    record = launches.LaunchRecord(id="peer-1", config="peer", script=None, log=None, exit_file=None,
                                   pid=sleeper.pid, pgid=sleeper.pid, port=port, state="ready",
                                   ready_at=time.time())
    launches.save("local", record)
    try:
        yield record
    finally:
        sleeper.kill()
        sleeper.wait()


# ---- item 1: a trickling /metrics ends at the reader's overall deadline --------------------------

def test_server_status_ends_on_a_trickling_metrics_page(peer, ready_launch):
    peer.trickle_s = TRICKLE_S
    started = time.monotonic()
    try:
        done = gpudeck("server", "status", "-p", "local", timeout=30)
    except subprocess.TimeoutExpired:
        pytest.fail("`server status` still waiting on a trickling /metrics after 30 s", pytrace=False)
    took = time.monotonic() - started
    assert done.returncode == 0, done.stderr
    assert "metrics: /metrics did not answer within 3s" in done.stdout, done.stdout
    assert took < 20, took


async def test_one_read_of_a_trickling_page_ends_at_its_deadline(peer):
    peer.trickle_s = TRICKLE_S
    from console.hosts.local import LocalHost

    port = int(peer.url.rsplit(":", 1)[1])
    found = await asyncio.wait_for(live_metrics.fetch(LocalHost(), port, 1.0), 30)
    assert found == "/metrics did not answer within 1s"


# ---- item 4: NaN, infinities and 1e308 read N/A -------------------------------------------------

ABSURD_PAGE = (b"vllm:num_requests_running NaN\n"
               b"vllm:num_requests_waiting +Inf\n"
               b"vllm:kv_cache_usage_perc +Inf\n"
               b"vllm:num_preemptions_total -Inf\n"
               b"vllm:time_to_first_token_seconds_sum 1e308\n"
               b"vllm:time_to_first_token_seconds_count 1e-300\n"
               b"vllm:inter_token_latency_seconds_sum NaN\n"
               b"vllm:inter_token_latency_seconds_count 3\n")


def test_values_no_server_can_mean_read_na_in_server_status(peer, ready_launch):
    peer.answers["/metrics"] = ABSURD_PAGE
    done = gpudeck("server", "status", "-p", "local")
    assert done.returncode == 0, done.stderr
    assert ("vllm metrics: running N/A · waiting N/A · KV cache N/A · preemptions N/A · "
            "TTFT mean N/A · ITL mean N/A") in done.stdout, done.stdout
    assert "inf" not in done.stdout.lower() and "nan" not in done.stdout.lower()
    as_json = json.loads(gpudeck("server", "status", "-p", "local", "--json").stdout)["servers"][0]["metrics"]
    assert as_json["server"] == "vllm"
    assert [as_json[k] for k in ("running", "waiting", "kv_cache_usage", "preemptions", "ttft_mean_ms",
                                 "itl_mean_ms")] == [None] * 6


@pytest.mark.parametrize("value", ["NaN", "+Inf", "-Inf", "1e308", "-1", "7"])
def test_the_server_tabs_line_reads_an_absurd_kv_cache_as_na(value):
    metrics = live_metrics.read_metrics(f"vllm:kv_cache_usage_perc {value}\nvllm:num_requests_running 2\n")
    event = ev.ServerMetricsSampled("p", "r", "c", metrics, taken_at=1.0, polled_at=1.0, stale=False,
                                    stale_after_s=3.0)
    line = metrics_line(event, 1.0).plain
    assert "running 2 · waiting N/A · KV N/A · preempt N/A" in line, line


# ---- item 5: a parse that outlives the deadline stops, and one runs at a time -------------------

def slow_page(lines: int = 110) -> bytes:
    """A page under the size and line caps whose parse takes seconds: each line is 64 KB of
    escaped quotes, about 40 ms to parse on a quiet core."""
    escapes = '\\"' * 32_700
    return "".join(f'vllm:num_requests_running{{a="{escapes}",n="{i}"}} 1\n' for i in range(lines)).encode()


async def test_an_abandoned_parse_stops_and_the_poll_parses_one_page_at_a_time(peer, monkeypatch):
    """The runtime's poll with a 0.5 s deadline, every 0.1 s, against a page that takes seconds to
    parse: never two parses at once, and each parse given up on ends before its page's end."""
    from console.hosts.local import LocalHost
    from console.runtime import metrics_poll

    peer.answers["/metrics"] = slow_page()
    monkeypatch.setattr(metrics_poll, "REQUEST_S", 0.5)
    lock = threading.Lock()
    running, most, ended = [0], [0], []
    real = live_metrics.read_metrics

    def counted(text, *rest):
        with lock:
            running[0] += 1
            most[0] = max(most[0], running[0])
        try:
            real(text, *rest)
            ended.append("whole")
        except ValueError as exc:
            ended.append(type(exc).__name__)
            raise
        finally:
            with lock:
                running[0] -= 1

    monkeypatch.setattr(live_metrics, "read_metrics", counted)
    port = int(peer.url.rsplit(":", 1)[1])
    record = SimpleNamespace(id="slow", config="slow", state="ready", port=port)
    polls: list[ev.ServerMetricsSampled] = []
    stop = asyncio.Event()

    def sampled(event) -> None:
        polls.append(event)
        if len(polls) >= 8:
            stop.set()
    task = asyncio.create_task(metrics_poll.poll_metrics(LocalHost(), "p", record, lambda: not stop.is_set(),
                                                         sampled, 0.1))
    await asyncio.wait_for(task, 120)
    for _ in range(200):  # the last parse given up on ends at its next line
        if running[0] == 0:
            break
        await asyncio.sleep(0.05)
    assert most[0] == 1, f"{most[0]} parses ran at once"
    assert ended and set(ended) == {"ParseStopped"}, ended
    assert all(p.stale and p.metrics is None for p in polls)
    assert any(p.error == "/metrics did not answer within 0.5s" for p in polls)


def test_a_line_longer_than_the_cap_is_refused_before_it_is_parsed():
    page = "vllm:num_requests_running 1\n" + 'vllm:x{a="' + '\\"' * (512 << 10) + '"} 1\n'  # 1 MiB
    started = time.process_time()
    with pytest.raises(ValueError) as err:
        live_metrics.read_metrics(page)
    assert "line 2 is longer than" in str(err.value) and "\n" not in str(err.value)
    assert time.process_time() - started < 0.5   # parsing that line alone takes about 5 s
