"""The simulated sglang server, run as a real subprocess on a free port.

Timing is checked against the roofline-derived step time the simulator is
built on (console.sim.roofline_timer), with an efficiency chosen so that a
step lasts tens of milliseconds and each test runs in a few seconds.
"""
from __future__ import annotations

import asyncio
import json
import signal
import subprocess
import sys
import time
from pathlib import Path

import httpx
import pytest
from prometheus_client.parser import text_string_to_metric_families

from console.sim.config import SimConfig, read_json
from console.sim.roofline_timer import build_timing
from tests.cli import gpudeck
from tests.realparts import free_port, wait_port

EFFICIENCY = 0.1     # GLM-5-NVFP4 on 8x RTX PRO 6000: ~32 ms/step at B=1, ~88 ms at B=8


def start_sim(tmp_path: Path, *extra: str, wait: bool = True) -> tuple[subprocess.Popen, int, Path]:
    port = free_port()
    log = tmp_path / "sim.log"
    proc = subprocess.Popen(
        [sys.executable, "-m", "console", "sim", "serve", "--port", str(port), "--startup-s", "0.3",
         "--log", str(log), "--state-dir", str(tmp_path / "state"), *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if wait and not wait_port(port, 15, proc):
        proc.kill()
        out, err = proc.communicate()
        pytest.fail(f"simulator did not open its port: {err.decode()[-2000:]}")
    return proc, port, log


def stop(proc: subprocess.Popen) -> None:
    if proc.poll() is None:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def roofline_step_s(batch: int, efficiency: float = EFFICIENCY) -> float:
    cfg = SimConfig(efficiency=efficiency)
    cfg.resolve_files()
    return build_timing(cfg, read_json(cfg.model_config)).timer.step_time_s(batch)


async def stream_times(client: httpx.AsyncClient, max_tokens: int) -> list[float]:
    """Arrival time of every token chunk of one streamed completion."""
    times: list[float] = []
    body = {"model": "GLM-5-NVFP4", "prompt": "hello world", "max_tokens": max_tokens, "stream": True,
            "ignore_eos": True, "stream_options": {"include_usage": True}}
    async with client.stream("POST", "/v1/completions", json=body) as resp:
        assert resp.status_code == 200
        async for line in resp.aiter_lines():
            if not line.startswith("data: ") or line == "data: [DONE]":
                continue
            doc = json.loads(line[6:])
            if doc["choices"] and doc["choices"][0].get("text"):
                times.append(time.monotonic())
    return times


@pytest.fixture(scope="module")
def sim(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("sim")
    proc, port, log = start_sim(tmp, "--efficiency", str(EFFICIENCY))
    yield f"http://127.0.0.1:{port}", log
    stop(proc)


async def test_single_stream_token_interval_matches_roofline_step(sim):
    url, _ = sim
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        times = await stream_times(client, 40)
    assert len(times) == 40
    measured = (times[-1] - times[1]) / (len(times) - 2)
    expected = roofline_step_s(1)
    assert abs(measured - expected) / expected < 0.05, (measured, expected)


async def test_eight_streams_token_interval_matches_roofline_step_at_batch_8(sim):
    url, _ = sim
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        streams = await asyncio.gather(*(stream_times(client, 40) for _ in range(8)))
    start = max(t[0] for t in streams)    # every stream running from here ...
    end = min(t[-1] for t in streams)     # ... to here: batch 8 throughout
    intervals = []
    for times in streams:
        inside = [t for t in times if start <= t <= end]
        intervals.append((inside[-1] - inside[0]) / (len(inside) - 1))
    measured = sum(intervals) / len(intervals)
    expected = roofline_step_s(8)
    assert expected > roofline_step_s(1) * 1.5     # the batch really changes the step
    assert abs(measured - expected) / expected < 0.05, (measured, expected)


async def test_metrics_parse_with_prometheus_parser_and_count_tokens(sim):
    url, _ = sim
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        await stream_times(client, 3)
        text = (await client.get("/metrics")).text
    families = {f.name: f for f in text_string_to_metric_families(text)}
    for name in ("sglang:num_running_reqs", "sglang:num_queue_reqs", "sglang:gen_throughput",
                 "sglang:token_usage", "sglang:prompt_tokens", "sglang:generation_tokens",
                 "sglang:time_to_first_token_seconds", "sglang:e2e_request_latency_seconds"):
        assert name in families, name
    assert families["sglang:time_to_first_token_seconds"].type == "histogram"
    generated = [s.value for s in families["sglang:generation_tokens"].samples if s.name.endswith("_total")]
    assert generated and generated[0] >= 3
    assert families["sglang:prompt_tokens"].samples[0].labels == {"model_name": "GLM-5-NVFP4"}


async def test_openai_api_shapes_and_simulated_label(sim):
    url, log = sim
    async with httpx.AsyncClient(base_url=url, timeout=30) as client:
        models = (await client.get("/v1/models")).json()
        assert models["data"][0]["id"] == "GLM-5-NVFP4"
        assert "SIMULATED" in models["data"][0]["owned_by"]
        assert (await client.get("/health")).status_code == 200
        chat = (await client.post("/v1/chat/completions", json={
            "messages": [{"role": "user", "content": "hi"}], "max_tokens": 4, "ignore_eos": True})).json()
        assert chat["choices"][0]["finish_reason"] == "length"
        assert chat["usage"]["completion_tokens"] == 4
        lines = []
        async with client.stream("POST", "/v1/chat/completions", json={
                "messages": [{"role": "user", "content": "hi"}], "max_tokens": 3, "ignore_eos": True,
                "stream": True, "stream_options": {"include_usage": True}}) as resp:
            async for line in resp.aiter_lines():
                if line:
                    lines.append(line)
        assert lines[-1] == "data: [DONE]"
        usage = json.loads(lines[-2][6:])
        assert usage["choices"] == [] and usage["usage"]["completion_tokens"] == 3
        tokens = (await client.post("/tokenize", json={"prompt": " hello world"})).json()["tokens"]
        assert (await client.post("/detokenize", json={"tokens": tokens})).json()["prompt"] == " hello world"
    text = log.read_text()
    assert "SIMULATED" in text.splitlines()[0]
    assert "server_args=ServerArgs(" in text and "tp_size=8" in text and "mem_fraction_static=0.85" in text
    assert "The server is fired up and ready to roll!" in text


def test_gpu_state_follows_memory_fraction_and_lists_processes(sim):
    from console.gpus.parse import parse_text
    from console.sim.state import read_state

    _, log = sim
    state_dir = log.parent / "state"
    state = read_state(state_dir)
    assert state["status"] == "ready" and state["pid"] is not None
    used = [g["memory_used_mib"] for g in state["gpus"]]
    total = state["gpus"][0]["memory_total_mib"]
    assert all(0.85 * total <= u <= total for u in used)
    assert len(state["processes"]) == 8
    table = gpudeck("sim", "nvidia-smi", "--state-dir", str(state_dir)).stdout
    snap = parse_text(table)
    assert len(snap.gpus) == 8 and len(snap.processes) == 8 and snap.flag_count("stale") == 0
