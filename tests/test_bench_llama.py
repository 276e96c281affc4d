"""The load generator against a real llama.cpp server (SmolLM2-135M, `-np 4`)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from console.bench.client import StreamClient, request_body
from console.bench.runner import BenchConfig, Sweep, exit_code
from console.bench.results import RunStore

ROOT = Path(__file__).resolve().parent.parent
ISSUE_LEVEL_KEYS = {"concurrency", "status", "num_prompts", "completed", "failed", "errors", "duration_s",
                    "input_tokens", "output_tokens", "request_throughput", "output_throughput",
                    "total_token_throughput", "ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"}
STATS = {"mean", "median", "p90", "p99", "std"}


def bench_cli(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console.bench", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())


async def test_output_tokens_equal_requested_length_under_ignore_eos(llama_server):
    async with StreamClient(llama_server.url, "completions") as client:
        completion = await client.send(0, request_body("completions", None, "The end.", 24))
    async with StreamClient(llama_server.url, "chat") as client:
        chat = await client.send(1, request_body("chat", None, "Say one word.", 24))
    for record in (completion, chat):
        assert record.ok, record.error
        assert record.output_tokens == 24
        assert record.output_tokens_from == "usage"
        assert len(record.chunk_times) == 24  # llama.cpp streams one token per chunk


async def test_tpot_agrees_with_server_timings_at_concurrency_1(llama_server):
    config = BenchConfig(url=llama_server.url, concurrency=[1], input_len=16, output_len=32,
                         num_prompts=4, warmup=1)
    doc = await Sweep(config).run()
    level = doc["levels"][0]
    assert level["status"] == "ok", level["errors"]
    assert doc["workload"]["input_len_method"] == "tokenize"
    assert level["input_tokens"] == 4 * 16
    client_tpot = level["tpot_ms"]["mean"]
    server_tpot = level["server_tpot_ms_mean"]
    assert server_tpot is not None, "llama.cpp's final chunk carries timings"
    difference = abs(client_tpot - server_tpot) / server_tpot
    print(f"client TPOT {client_tpot:.3f} ms, server {server_tpot:.3f} ms, difference {difference:.2%}")
    assert difference < 0.05


def test_sweep_over_1_2_4_completes(llama_server, gpudeck_home):
    out = bench_cli("--url", llama_server.url, "--concurrency", "1,2,4", "--input-len", "16",
                    "--output-len", "16", "--num-prompts", "4", "--warmup", "1", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["url"] == llama_server.url and doc["model"]
    # how finely chunks were stamped, so an ITL is never read finer than that
    assert doc["client_clock"]["loop"] in ("uvloop", "asyncio") and doc["client_clock"]["resolution_ms"] > 0
    assert [lv["concurrency"] for lv in doc["levels"]] == [1, 2, 4]
    for level in doc["levels"]:
        assert ISSUE_LEVEL_KEYS <= set(level)
        assert level["status"] == "ok" and level["completed"] == 4 and level["failed"] == 0
        assert level["output_tokens"] == 4 * 16
        for key in ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms"):
            assert set(level[key]) == STATS and level[key]["median"] > 0
        assert level["output_throughput"] > 0
    saved = Path(doc["path"])
    assert saved.parent == gpudeck_home / "data" / "profiles" / "local" / "runs"
    assert json.loads(saved.read_text())["levels"] == doc["levels"]
    rows = [json.loads(line) for line in Path(doc["requests_path"]).read_text().splitlines()]
    assert len(rows) == 12 and all(r["ok"] for r in rows)


def test_events_stream_on_stdout(llama_server):
    out = bench_cli("--url", llama_server.url, "--concurrency", "2", "--input-len", "8",
                    "--output-len", "40", "--num-prompts", "4", "--warmup", "0", "--events")
    assert out.returncode == 0, out.stderr
    lines = [json.loads(line) for line in out.stdout.splitlines()]
    kinds = [e["event"] for e in lines]
    assert kinds[0] == "run-start" and kinds[-1] == "run-end"
    assert kinds.count("level-start") == 1 and kinds.count("level-end") == 1
    assert kinds.count("request") == 4
    # Every level ends with a tick for its last part-second, and that tick waits for the level's
    # first /metrics scrape: neither depends on how fast the machine runs the level.
    ticks = [e for e in lines if e["event"] == "tick"]
    assert ticks and ticks[-1]["final"] is True
    assert kinds.index("level-end") > kinds.index("tick")
    assert {"second", "output_tokens", "in_flight", "completed", "failed", "lag_ms", "live"} <= set(ticks[0])
    assert sum(t["output_tokens"] for t in ticks) == 4 * 40
    served = [e["server"] for e in ticks if e["server"]]
    assert served and "gen_tps" in served[0]  # the server was started with --metrics
    assert lines[-1]["exit_code"] == 0


async def test_prometheus_scraped_from_llama_server(llama_server):
    import httpx

    from console.bench.prom import Scraper

    async with httpx.AsyncClient(base_url=llama_server.url) as client:
        view = await Scraper(client).scrape()
    assert view is not None and view["running"] is not None and view["queued"] is not None


def test_in_process_sweep_saves_and_exits_zero(llama_server, gpudeck_home):
    import asyncio

    store = RunStore("local")
    config = BenchConfig(url=llama_server.url, concurrency=[2], input_len=8, output_len=8, num_prompts=2,
                         warmup=0, api="chat")
    doc = asyncio.run(Sweep(config, store=store).run())
    assert exit_code(doc) == 0
    assert store.path.exists() and json.loads(store.path.read_text())["api"] == "chat"


def test_level_sharded_across_two_worker_processes(llama_server):
    out = bench_cli("--url", llama_server.url, "--concurrency", "4", "--input-len", "8", "--output-len", "8",
                    "--num-prompts", "6", "--warmup", "0", "--workers", "2", "--json")
    assert out.returncode == 0, out.stderr
    level = json.loads(out.stdout)["levels"][0]
    assert level["workers"] == 2 and level["completed"] == 6 and level["output_tokens"] == 48
    assert len(level["client_lag_ms"]["workers"]) == 2
    assert level["tpot_ms"]["median"] > 0


def test_sigterm_stops_the_sweep_and_keeps_what_was_measured(llama_server):
    import signal

    proc = subprocess.Popen([sys.executable, "-m", "console.bench", "--url", llama_server.url,
                             "--concurrency", "2,4", "--input-len", "8", "--output-len", "32",
                             "--num-prompts", "8", "--warmup", "0", "--events"],
                            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=os.environ.copy())
    seen = []
    for line in proc.stdout:
        seen.append(json.loads(line))
        if seen[-1]["event"] == "request":
            proc.send_signal(signal.SIGTERM)
            break
    seen += [json.loads(line) for line in proc.stdout]
    assert proc.wait(60) == 3
    assert "Traceback" not in proc.stderr.read()
    first, second = [e["summary"] for e in seen if e["event"] == "level-end"]
    assert first["stopped"] is True and first["status"] == "partial"
    assert first["completed"] >= 1
    assert first["completed"] + first["failed"] + first.get("not_sent", 0) == 8
    assert "stopped by the operator" in first["errors"] or first.get("not_sent")
    assert second["status"] == "skipped" and second["skipped_because"] == "stopped by the operator"
