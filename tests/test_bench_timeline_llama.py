"""A real llama.cpp server with --metrics, a sweep, and its timeline: every series on one clock."""
from __future__ import annotations

import bisect
import json

import pytest

from tests.test_bench_llama import bench_cli

POLL_S = 1.0   # the sweep scrapes /metrics once a second


def in_flight_between(requests: list[dict], t0: float, t1: float) -> tuple[int, int]:
    """The fewest and most requests the client had open at any moment of [t0, t1]."""
    events = sorted([(r["t"], 1) for r in requests] + [(r["end"], -1) for r in requests])
    times = [t for t, _ in events]
    open_now = sum(d for _, d in events[:bisect.bisect_right(times, t0)])
    low = high = open_now
    for _t, d in events[bisect.bisect_right(times, t0):bisect.bisect_right(times, t1)]:
        open_now += d
        low, high = min(low, open_now), max(high, open_now)
    return low, high


@pytest.mark.slow
def test_a_sweeps_timeline_holds_client_server_and_marks_on_one_clock(llama_server):
    out = bench_cli("--url", llama_server.url, "--concurrency", "1,2", "--input-len", "16",
                    "--output-len", "256", "--prompts-per-stream", "2", "--warmup", "0", "--json", timeout=600)
    assert out.returncode == 0, out.stderr
    run_id = json.loads(out.stdout)["run_id"]
    shown = bench_cli("show", run_id, "--json")
    assert shown.returncode == 0, shown.stderr
    doc = json.loads(shown.stdout)
    assert doc["run"]["run_id"] == run_id
    tl = doc["timeline"]
    fields = tl["fields"]
    rows = {name: [dict(zip(fields[name], p)) for p in s["points"]] for name, s in tl["series"].items()}
    requests, client, server = rows["requests"], rows["client"], rows["server"]
    assert len(requests) == 2 + 4
    assert all(r["ok"] for r in requests)
    # order of events on the one clock: sent, then the first token, then the last
    assert all(0 <= r["t"] < r["first_token"] <= r["end"] for r in requests)
    assert {r["level"] for r in requests} == {0, 1}
    assert client and server, "the client's ticks and the server's /metrics are both recorded"
    marks = {(m["kind"], m["level"]): m["t"] for m in tl["marks"]}
    for level in (0, 1):
        start, end = marks[("level-start", level)], marks[("level-end", level)]
        mine = [r for r in requests if r["level"] == level]
        assert all(start <= r["t"] and r["end"] <= end for r in mine)
    assert tl["anchor"]["wall"] > 1.7e9
    # the server's running count agrees with the client's in-flight within one poll
    busy = [s for s in server if s["running"] is not None and s["t"] > marks[("level-start", 1)]
            and s["t"] < marks[("level-end", 1)]]
    assert busy, "a scrape during the 2-stream level"
    seen_producing = 0
    for s in busy:
        # what the server holds (running, plus waiting when it says) lies, within one poll of its reading,
        # between the requests the client saw producing tokens all that time (llama.cpp counts a request
        # once its slot started, which on a busy host comes well after the send) and the most it had open
        held = s["running"] + (s["waiting"] or 0)
        t0, t1 = s["t"] - POLL_S, s["answered"] + POLL_S
        producing = sum(1 for r in requests if r["first_token"] <= t0 and r["end"] >= t1)
        _, most_open = in_flight_between(requests, t0, t1)
        assert producing <= held <= most_open, (s, producing, most_open)
        seen_producing = max(seen_producing, producing)
    # requests long enough (256 tokens) that some reading fell while a request produced all through
    # its window: the check above is not only 0 <= 0 on idle readings at the level's two ends
    assert seen_producing >= 1 and max(s["running"] for s in busy) >= 1
    text = bench_cli("show", run_id)
    assert text.returncode == 0, text.stderr
    assert "timeline: requests 6, client " in text.stdout
