"""Calibration from a finished sweep: the fit recovers what it is given, on paper, on the simulator and on llama.cpp."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from console import roofline
from console.roofline.calibrate import MAX_MISS, calibrate, dominant_term, fit
from console.roofline.runs import load_one_run
from tests.cli import gpudeck

ROOT = Path(__file__).resolve().parent.parent
SIM_CONFIG = ROOT / "console" / "sim" / "data" / "GLM-5-NVFP4.config.json"
GPU = "RTX PRO 6000 Blackwell"


def _glm(batches=(1, 2, 4, 8, 16, 32)):
    from console.roofline.from_profile import Inputs, compute_inputs

    return compute_inputs(Inputs(config=str(SIM_CONFIG), gpu=GPU, count=8), batches=batches)


def test_fit_recovers_eta_and_overhead_from_exact_points():
    roof = _glm()
    eta, overhead = 0.3, 0.095
    points = [(b, roof.step_time_s(b, "ideal") / eta + overhead) for b in (1, 2, 8, 32)]
    cal = fit(roof, points)
    assert cal.eta == pytest.approx(eta, rel=1e-9) and cal.overhead_s == pytest.approx(overhead, rel=1e-9)
    assert cal.r2 == pytest.approx(1.0) and cal.levels_used == (1, 2, 8, 32)
    assert cal.tok_s(roof, 64) == pytest.approx(64 / (roof.step_time_s(64, "ideal") / eta + overhead))


def test_the_seed_campaign_is_overhead_bound():
    """10.36 tok/s at one stream against a 324 tok/s ideal: most of a 96 ms step is fixed overhead."""
    roof = _glm()
    eta, overhead = 0.25, 0.084
    points = [(b, roof.step_time_s(b, "ideal") / eta + overhead) for b in (1, 2, 10)]
    cal = fit(roof, points)
    sentence = dominant_term(roof, cal, 1)
    assert sentence.startswith("per-step overhead is 87% of the 96.3 ms step at batch 1")
    assert "not bandwidth" in sentence


def test_fit_stays_physical():
    roof = _glm()
    # falling TPOT with more bytes cannot mean a negative efficiency: all of it is overhead
    flat = fit(roof, [(1, 0.05), (16, 0.049), (32, 0.048)])
    assert flat.eta is None and flat.overhead_s == pytest.approx(0.049)
    # a line that would need negative overhead goes through the origin instead
    steep = fit(roof, [(1, roof.step_time_s(1, "ideal") / 0.5 - 0.001), (32, roof.step_time_s(32, "ideal") / 0.5)])
    assert steep.overhead_s == 0 and 0.45 < steep.eta < 0.55
    assert fit(roof, [(4, 0.02)]) is None          # one level: two unknowns cannot be fitted
    assert fit(roof, [(4, 0.02), (4, 0.03)]) is None


def _start_sim(tmp_path: Path, *extra: str):
    from tests.realparts import free_port, wait_port

    port = free_port()
    proc = subprocess.Popen([sys.executable, "-m", "console", "sim", "serve", "--port", str(port), "--startup-s", "0.3",
                             "--log", str(tmp_path / "sim.log"), "--state-dir", str(tmp_path / "state"),
                             "--gpu", GPU, *extra], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if not wait_port(port, 15, proc):
        proc.kill()
        pytest.fail(f"simulator did not open its port: {proc.communicate()[1].decode()[-2000:]}")
    return proc, f"http://127.0.0.1:{port}"


def _sweep(url: str, levels: str, output_len: int, prompts_per_stream: int = 1) -> dict:
    out = subprocess.run([sys.executable, "-m", "console.bench", "--url", url, "--concurrency", levels,
                          "--input-len", "16", "--output-len", str(output_len),
                          "--prompts-per-stream", str(prompts_per_stream), "--warmup", "1", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=300, env=os.environ.copy())
    assert out.returncode == 0, out.stderr[-2000:]
    return json.loads(out.stdout)


def _roofline_cli(*args: str) -> dict:
    out = gpudeck("roofline", *args, "--json")
    assert out.returncode == 0, out.stderr
    return json.loads(out.stdout)


@pytest.mark.parametrize("eta,overhead_ms,levels,dominant", [
    (0.25, 20.0, "1,4,16", "per-step overhead is"),
    (0.6, 2.0, "1,8,32", "memory traffic is"),
])
@pytest.mark.slow
def test_fit_recovers_the_simulators_efficiency_and_overhead(tmp_path, gpudeck_home, eta, overhead_ms, levels, dominant):
    proc, url = _start_sim(tmp_path, "--efficiency", str(eta), "--step-overhead-ms", str(overhead_ms))
    try:
        run = _sweep(url, levels, output_len=32)
    finally:
        proc.terminate()
        proc.wait(10)
    doc = _roofline_cli("--model-config", str(SIM_CONFIG), "--gpu", GPU, "--count", "8", "--batch", levels + ",64",
                        "--run", run["path"])
    cal = doc["calibration"]
    assert cal["levels_used"] == [int(b) for b in levels.split(",")]
    assert cal["eta"] == pytest.approx(eta, rel=0.1)
    assert cal["overhead_ms"] == pytest.approx(overhead_ms, rel=0.15, abs=0.5)
    assert cal["r2"] > 0.98
    assert cal["dominant"].startswith(dominant)
    assert [p["batch"] for p in cal["predicted"]] == [int(b) for b in levels.split(",")] + [64]
    print(f"simulator set to eta {eta}, {overhead_ms} ms: fit eta {cal['eta']:.4f}, "
          f"overhead {cal['overhead_ms']:.2f} ms, r2 {cal['r2']:.4f}")


def test_calibrates_a_real_llama_cpp_sweep(llama_server, gpudeck_home, tmp_path):
    """SmolLM2-135M on this machine's CPU, against a catalogue entry the operator adds for it."""
    (gpudeck_home / "config").mkdir(parents=True, exist_ok=True)
    from console.roofline.catalogue import user_catalogue_path

    user_catalogue_path().parent.mkdir(parents=True, exist_ok=True)
    user_catalogue_path().write_text(
        '[[gpu]]\nkey = "test-cpu"\nname = "Test CPU"\nmemory_gb = 8\nbandwidth_gbs = 20\n'
        'tflops = { bf16 = 0.5 }\ninterconnect = "none"\nallreduce_alpha_us = 0\nallreduce_beta_gbs = 1\n')
    run = _sweep(llama_server.url, "1,2,4", output_len=16)
    measured = load_one_run(Path(run["path"]))
    config = ROOT / "tests" / "fixtures" / "model-configs" / "SmolLM2-135M.json"
    doc = _roofline_cli("--model-config", str(config), "--gpu", "Test CPU", "--count", "1", "--batch", "1,2,4",
                        "--context", "32", "--run", run["path"])
    # the CLI's figures are the least-squares fit of the run's own TPOTs, checked against them (no figure of
    # the machine's speed is asserted: this host's load decides those, and whether a line explains them)
    roof = roofline.compute(roofline.load_model(config), "Test CPU", 1, context=32, batches=(1, 2, 4))
    again = calibrate(roof, measured.tpot_points())
    cal = doc["calibration"]
    if again.calibration is None:          # a line that misses the run's own TPOTs: said, never shown
        assert cal is None and doc["calibration_note"] == f"run {measured.name}: no fit ({again.reason})"
        assert doc["calibration_refused"]["levels_used"] == [1, 2, 4]
        print(f"llama.cpp SmolLM2-135M: no fit ({again.reason})")
        return
    assert cal["levels_used"] == [1, 2, 4] and cal["run"] == measured.name
    assert cal["overhead_ms"] >= 0 and (cal["eta"] is None or cal["eta"] > 0)
    assert cal["worst_miss"] <= MAX_MISS
    assert cal["overhead_ms"] == pytest.approx(again.calibration.overhead_s * 1e3)
    assert cal["eta"] == (pytest.approx(again.calibration.eta) if again.calibration.eta else None)
    print(f"llama.cpp SmolLM2-135M: eta {cal['eta']}, overhead {cal['overhead_ms']:.2f} ms, r2 {cal['r2']}, "
          f"measured TPOT s {measured.tpot_points()}")


def test_runs_give_tpot_points(tmp_path):
    path = tmp_path / "sweep.json"
    path.write_text(json.dumps({"levels": [
        {"concurrency": 1, "status": "ok", "output_throughput": 10.0, "tpot_ms": {"median": 96.0}},
        {"concurrency": 2, "status": "failed", "output_throughput": None, "tpot_ms": {"median": 80.0}},
        {"concurrency": 4, "status": "ok", "output_throughput": 30.0, "tpot_ms": {"median": None}},
        {"concurrency": 8, "status": "ok", "output_throughput": 60.0, "tpot_ms": {"median": 120.0}}]}))
    assert load_one_run(path).tpot_points() == [(1, 0.096, None), (8, 0.12, None)]


def test_cli_without_a_fit_says_why(tmp_path):
    path = tmp_path / "one.json"
    path.write_text(json.dumps({"levels": [{"concurrency": 1, "status": "ok", "output_throughput": 10.0,
                                            "tpot_ms": {"median": 96.0}}]}))
    doc = _roofline_cli("--model-config", str(SIM_CONFIG), "--gpu", GPU, "--count", "8", "--run", str(path))
    assert doc["calibration"] is None and "fewer than two" in doc["calibration_note"]
