"""Issue 16 against the real llama.cpp server: unique prompts, the model check, open loop,
datasets, vLLM's result format, and a server the operator stopped mid-sweep."""
from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import httpx

from console.bench.workload import Tokenizer, build_workload
from tests.realparts import start_llama_server
from tests.test_bench_workload import longest_shared_prefix

ROOT = Path(__file__).resolve().parent.parent


def bench(*args: str, timeout: float = 240) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console.bench", *args], cwd=ROOT, capture_output=True,
                          text=True, timeout=timeout, env=os.environ.copy())


async def test_prompts_are_exact_length_distinct_and_unshared_at_the_token_level(llama_server):
    async with httpx.AsyncClient(base_url=llama_server.url, timeout=30) as client:
        tok = Tokenizer(client, None)
        assert await tok.probe()
        work = await build_workload(tok, 200, 48, seed=11)
        assert work.method == "tokenize" and set(work.lengths) == {48}
        ids = [await tok.tokenize(p) for p in work.prompts]
    assert len({tuple(i) for i in ids}) == 200
    assert longest_shared_prefix(ids) <= 3
    # the alphabet is ordinary text: detokenizing it never yields a special token's text
    assert not any("<|" in p for p in work.prompts)


def test_a_model_the_server_does_not_list_stops_the_run_before_level_1(llama_server, gpudeck_home):
    out = bench("--url", llama_server.url, "--model", "no-such-model", "--concurrency", "1", "--json")
    assert out.returncode == 4
    assert json.loads(out.stdout)["status"] == "not started"
    assert out.stderr.startswith("gpudeck bench: not started: model 'no-such-model' is not served at ")
    assert out.stderr.count("\n") == 1


def test_open_loop_with_a_cap_reports_queue_time_and_vllm_result(llama_server, gpudeck_home, tmp_path):
    result = tmp_path / "vllm.json"
    out = bench("--url", llama_server.url, "--request-rate", "inf", "--max-concurrency", "1", "--num-prompts", "4",
                "--warmup", "0", "--input-len", "8", "--output-len", "8", "--percentiles", "50,99.9",
                "--format", "vllm", "--out", str(result), "--json")
    assert out.returncode == 0, out.stderr
    level = json.loads(out.stdout)["levels"][0]
    assert level["request_rate"] == float("inf") and level["max_concurrency"] == 1 and level["label"] == "inf/s ≤1"
    assert level["concurrency"] is None  # not a closed-loop level: reports keyed by concurrency skip it
    assert level["max_concurrent_requests"] == 1
    # all four were due at once and only one could be in flight: three waited in the client
    assert level["queue_ms"]["p99.9"] > 0 and sorted([level["queue_ms"]["median"], 0.0])[0] == 0.0
    assert "p99.9" in level["ttft_ms"] and level["peak_output_throughput"] > 0
    doc = json.loads(result.read_text())
    for key in ("completed", "total_input_tokens", "total_output_tokens", "request_throughput",
                "output_throughput", "total_token_throughput", "max_output_tokens_per_s",
                "max_concurrent_requests", "mean_ttft_ms", "median_ttft_ms", "std_ttft_ms", "p99.9_ttft_ms",
                "mean_tpot_ms", "p99.9_itl_ms", "median_e2el_ms", "ttfts", "itls", "input_lens", "output_lens"):
        assert key in doc, key
    assert doc["request_rate"] == "inf" and doc["max_concurrency"] == 1 and doc["completed"] == 4
    assert doc["total_output_tokens"] == 32 and len(doc["itls"]) == 4 and len(doc["itls"][0]) == 7


def test_chat_dataset_sets_each_requests_output_length(llama_server, gpudeck_home, tmp_path):
    data = tmp_path / "d.jsonl"
    data.write_text("\n".join(json.dumps({"messages": [{"role": "user", "content": f"Count to {n}."}],
                                          "output_len": n}) for n in (3, 5, 7)) + "\n")
    out = bench("--url", llama_server.url, "--concurrency", "2", "--num-prompts", "3", "--warmup", "0",
                "--api", "chat", "--dataset", str(data), "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["workload"]["dataset"] == "jsonl" and doc["workload"]["input_len_method"] == "approximate"
    assert doc["levels"][0]["output_tokens"] == 15


def test_server_stopped_by_the_operator_mid_level_is_not_a_death(tmp_path, gpudeck_home):
    from console.store import launches

    server = start_llama_server(tmp_path / "llama.log")
    record = launches.LaunchRecord(id="l-op", config="smol", script=None, log=None, exit_file=None,
                                  pid=server.proc.pid, port=server.port, state="ready")
    launches.save("local", record)
    try:
        proc = subprocess.Popen(
            [sys.executable, "-m", "console.bench", "--url", server.url, "--concurrency", "2,4",
             "--input-len", "8", "--output-len", "48", "--num-prompts", "8", "--warmup", "0", "--events"],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=os.environ.copy())
        seen = []
        for line in proc.stdout:
            seen.append(json.loads(line))
            if seen[-1]["event"] == "request":
                # what `gpudeck server stop` records before it signals the group
                record.kill_requested, record.state = True, "stopping"
                launches.save("local", record)
                server.proc.kill()
                server.proc.wait(10)
                record.state, record.stopped_at = "stopped", time.time()
                launches.save("local", record)
                break
        seen += [json.loads(line) for line in proc.stdout]
        assert proc.wait(120) == 3
    finally:
        server.stop()
    first, second = [e["summary"] for e in seen if e["event"] == "level-end"]
    assert first["server_died"] is None
    assert first["server_stopped"]["message"].startswith("server stopped by operator at ")
    assert second["status"] == "skipped" and second["skipped_because"] == "server stopped by operator"
