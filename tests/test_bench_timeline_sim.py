"""The simulator's crash at 256 streams, on the run's timeline: the queue and the KV cache rising,
the decisive log line as a mark, and the hang before the death named as an inference."""
from __future__ import annotations

import pytest

from console.bench.runner import BenchConfig, Sweep
from console.store import launches
from tests.test_sim_server import start_sim, stop


@pytest.mark.slow
async def test_the_crash_at_256_streams_on_the_timeline(tmp_path):
    # the NCCL fault: the collective never finishes (every stream silent), then its watchdog kills
    # the server at 256 streams; 32 running at most, so a 64-stream level already queues
    proc, port, log = start_sim(tmp_path, "--efficiency", "0.5", "--crash-at-concurrency", "256",
                                "--crash-kind", "nccl", "--max-running-requests", "32")
    launches.save("local", launches.LaunchRecord(
        id="sim-1", config="sim", script=None, log=str(log), exit_file=None, pid=proc.pid, port=port,
        state="ready", flags={"max-running-requests": 32}))
    try:
        config = BenchConfig(url=f"http://127.0.0.1:{port}", concurrency=[4, 64, 256], input_len=32,
                             output_len=64, prompts_per_stream=1, warmup=0, stall_s=30)
        sweep = Sweep(config)
        doc = await sweep.run()
    finally:
        stop(proc)
    assert [lv["status"] for lv in doc["levels"]] == ["ok", "ok", "failed"]
    tl = sweep.timeline
    marks = tl.marks
    start = {m["level"]: m["t"] for m in marks if m["kind"] == "level-start"}
    end = {m["level"]: m["t"] for m in marks if m["kind"] == "level-end"}
    server = [dict(zip(("t", "answered", "running", "waiting", "kv_cache"), p[:5]))
              for p in tl.series["server"].points]

    def during(level: int) -> list[dict]:
        return [s for s in server if start[level] <= s["t"] <= end[level] and s["kv_cache"] is not None]

    low, high = during(0), during(1)
    assert low and high, "scrapes during the 4- and the 64-stream levels"
    assert max(s["waiting"] for s in low) == 0 < max(s["waiting"] for s in high)
    assert max(s["kv_cache"] for s in high) > max(s["kv_cache"] for s in low)
    decisive = [m for m in marks if m["kind"] == "decisive line"]
    assert len(decisive) == 1 and decisive[0]["level"] == 2
    assert decisive[0]["text"].startswith("nccl: ") and "log line" in decisive[0]["text"]
    assert start[2] <= decisive[0]["t"] <= end[2] + 1
    notes = doc["levels"][2].get("notes") or []
    assert any(n.startswith("inference: no token for ") and n.endswith(": hung before the crash") for n in notes), \
        notes
    assert any("max-num-seqs (32)" in n for n in doc["levels"][1].get("notes") or [])
