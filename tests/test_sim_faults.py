"""Each injectable fault: the exit status, broken streams, the triage class, the GPU picture."""
from __future__ import annotations

import asyncio

import httpx
import pytest

from console.sim.state import read_state
from console.servers.triage import classify
from tests.cli import gpudeck
from tests.test_sim_server import start_sim, stop


async def _stream_until_broken(url: str, streaming: asyncio.Event | None = None) -> str:
    """Stream one long completion; say how it ended. `streaming` is set at its first token."""
    body = {"prompt": "x", "max_tokens": 500, "stream": True, "ignore_eos": True}
    try:
        async with httpx.AsyncClient(base_url=url, timeout=20) as client:
            async with client.stream("POST", "/v1/completions", json=body) as resp:
                async for line in resp.aiter_lines():
                    if streaming is not None and line.startswith("data: {"):
                        streaming.set()
                    if line == "data: [DONE]":
                        return "finished"
    except (httpx.RemoteProtocolError, httpx.ReadError) as exc:
        return f"broken: {type(exc).__name__}"
    return "ended without [DONE]"


async def test_illegal_address_at_concurrency_breaks_streams_exits_1_and_triages(tmp_path):
    proc, port, log = start_sim(tmp_path, "--efficiency", "0.5", "--crash-at-concurrency", "3",
                                "--crash-kind", "illegal-address")
    try:
        url = f"http://127.0.0.1:{port}"
        streaming = [asyncio.Event(), asyncio.Event()]
        first = [asyncio.create_task(_stream_until_broken(url, each)) for each in streaming]
        # two streams run fine, tokens flowing: below the crash level
        await asyncio.wait_for(asyncio.gather(*(each.wait() for each in streaming)), 30)
        assert not any(t.done() for t in first)
        outcomes = await asyncio.gather(*first, _stream_until_broken(url))
        assert all(o.startswith("broken") for o in outcomes), outcomes
        assert proc.wait(10) == 1
    finally:
        stop(proc)
    lines = log.read_text().splitlines()
    assert any("Decode batch." in line for line in lines)
    result = classify(lines)
    assert result.cls == "cuda-illegal-address"
    assert "illegal memory access" in " ".join(result.excerpt)
    state = read_state(tmp_path / "state")
    assert state["status"] == "crashed" and state["processes"] == []
    assert [g["memory_used_mib"] for g in state["gpus"]] == [0] * 8
    assert [g["utilization_gpu"] for g in state["gpus"]] == [100] * 7 + [0]


def test_oom_at_startup_exits_1_before_opening_the_port(tmp_path):
    proc, port, log = start_sim(tmp_path, "--crash-kind", "oom", wait=False)
    assert proc.wait(15) == 1
    text = log.read_text()
    assert "Uvicorn running" not in text
    assert classify(text.splitlines()).cls == "oom"
    assert read_state(tmp_path / "state")["status"] == "crashed"


async def test_nccl_watchdog_stalls_then_exits_134_and_triages(tmp_path):
    proc, port, log = start_sim(tmp_path, "--efficiency", "0.5", "--crash-at-concurrency", "1",
                                "--crash-kind", "nccl")
    try:
        outcome = await _stream_until_broken(f"http://127.0.0.1:{port}")
        assert outcome.startswith("broken"), outcome
        assert proc.wait(10) == 134
    finally:
        stop(proc)
    result = classify(log.read_text().splitlines())
    assert result.cls == "nccl"


@pytest.mark.slow
async def test_hang_stops_answering_and_never_exits(tmp_path):
    proc, port, log = start_sim(tmp_path, "--efficiency", "0.5", "--crash-at-concurrency", "1",
                                "--crash-kind", "hang")
    try:
        url = f"http://127.0.0.1:{port}"
        async with httpx.AsyncClient(base_url=url, timeout=1.0) as client:
            assert (await client.get("/health")).status_code == 200
            with pytest.raises(httpx.ReadTimeout):
                await client.post("/v1/completions", json={"prompt": "x", "max_tokens": 50})
            with pytest.raises(httpx.ReadTimeout):
                await client.get("/health")
        assert proc.poll() is None
        state = read_state(tmp_path / "state")
        assert state["status"] == "hung" and state["gpus"][0]["utilization_gpu"] == 100
    finally:
        stop(proc)
    # A hang leaves no error in the log: triage sees a server that was serving.
    result = classify(log.read_text().splitlines())
    assert result.cls == "healthy" and result.ready_seen


def test_bad_arguments_give_one_line_on_stderr(tmp_path):
    out = gpudeck("sim", "serve", "--efficiency", "3", timeout=30)
    assert out.returncode == 2
    assert len(out.stderr.strip().splitlines()) == 1 and "efficiency" in out.stderr
