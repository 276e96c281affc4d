"""The server's own view of a level: llama.cpp's token counter is read over the level, never between scrapes.

llama.cpp adds a request's generated tokens to `llamacpp:tokens_predicted_total` when the request
finishes, so between two scrapes a second apart the counter moves by 0 or by whole requests: on an
H200 the level table read 384 / 1,026 / 0.0 / 7,997 tok/s where the client measured 454 / 1,183 /
1,207 / 1,468, and `running` 2.0 at 64 streams (the last scrape, at the level's tail). The recorded
sequence is a real llama-server's /metrics across one level of 4 streams x 3 requests x 48 tokens
(tests/fixtures/bench/llamacpp-level/record.py wrote it).
"""
from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from console.bench.prom import level_view, parse_metrics, server_view

LEVEL = Path(__file__).parent / "fixtures" / "bench" / "llamacpp-level"


def _scrapes():
    text = (LEVEL / "scrapes.txt").read_text()
    parts = re.split(r"^#### scrape \d+ at ([0-9.]+) s\n", text, flags=re.M)[1:]
    return [parse_metrics(body, at=float(at)) for at, body in zip(parts[::2], parts[1::2])]


def test_the_recording_is_what_the_issue_describes():
    """The counter jumps by whole requests (48 tokens each), and stands still in between."""
    totals = [s.gen_tokens_total for s in _scrapes()]
    steps = {b - a for a, b in zip(totals, totals[1:])}
    assert steps <= {0, 48, 144, 192} and 0 in steps and max(steps) > 48


def test_no_tick_rate_from_a_counter_that_moves_at_request_end():
    scrapes = _scrapes()
    views = [server_view(a, b) for a, b in zip(scrapes, scrapes[1:])]
    assert all(v["gen_tps"] is None for v in views)          # N/A, not 0.0 one second and 300 the next
    assert {v["running"] for v in views} <= {0.0, 3.0, 4.0}   # the gauge now: slots busy at the scrape


def test_the_level_reads_the_counter_over_the_whole_level():
    meta = json.loads((LEVEL / "level.json").read_text())
    scrapes = _scrapes()
    view = level_view(scrapes[0], scrapes[-1], scrapes[1:-1], meta["duration_s"])
    # every token the client received, counted by the server, over the level's duration
    assert view["gen_tokens"] == meta["client_output_tokens"] == 4 * 3 * 48
    assert view["gen_tps"] == pytest.approx(meta["client_output_tokens"] / meta["duration_s"])
    # the server ran ~4 requests at a time all level long, though the last scrape saw none
    assert scrapes[-1].running == 0
    assert view["running"] == pytest.approx(3.95, abs=0.05) and view["running_is"] == "mean busy slots per decode call"
    assert view["queued"] == 0 and view["over"] == "level"


def test_a_level_without_its_first_scrape_has_no_rate():
    scrapes = _scrapes()
    view = level_view(None, scrapes[-1], scrapes[1:-1], 36.0)
    assert view["gen_tps"] is None and view["gen_tokens"] is None
    assert view["running"] is not None and view["running_is"] == "mean of the level's scrapes"


def test_a_server_restarted_in_the_level_has_no_rate():
    scrapes = _scrapes()
    view = level_view(scrapes[-1], scrapes[1], [], 36.0)      # the counter went down
    assert view["gen_tps"] is None and view["gen_tokens"] is None


def test_vllm_still_gets_a_tick_rate_and_a_level_average():
    text = (Path(__file__).parent / "fixtures" / "bench" / "vllm_metrics.txt").read_text()
    first = parse_metrics(text, at=100.0)
    second = parse_metrics(text.replace("120000.0", "121500.0"), at=102.0)
    assert not first.counted_at_request_end
    assert server_view(first, second)["gen_tps"] == pytest.approx(750.0)
    view = level_view(first, second, [], 2.0)
    assert view["gen_tps"] == pytest.approx(750.0) and view["running"] == 64


def test_a_real_llama_server_level_counts_what_the_client_got(llama_server, gpudeck_home):
    """A sweep against llama-server (`-np 4`): the level's server figures are the level's, not its tail's."""
    import asyncio

    from console.bench.runner import BenchConfig, Sweep

    config = BenchConfig(url=llama_server.url, concurrency=[4], input_len=8, output_len=24, num_prompts=8,
                         warmup=1)
    doc = asyncio.run(Sweep(config).run())
    level = doc["levels"][0]
    assert level["status"] == "ok", level["errors"]
    server = level["server"]
    assert server["over"] == "level" and server["gen_tokens"] == level["output_tokens"] == 8 * 24
    assert server["gen_tps"] == pytest.approx(level["output_throughput"])
    assert server["running_is"] == "mean busy slots per decode call" and 1.0 < server["running"] <= 4.0
    print(f"llama-server at 4 streams: client {level['output_throughput']:.1f} tok/s, server {server['gen_tps']:.1f} "
          f"tok/s over the level, {server['running']:.2f} busy slots per decode")
