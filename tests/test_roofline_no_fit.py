"""A calibration line that misses its own points is "no fit", never an explanation.

The sweep is the one a real H200 gave (llama.cpp's CUDA server, a random-weight 1.7B Llama in F16,
3.42 GB, 64 slots, 256 prompt + 128 output tokens): 454 / 1,183 / 1,207 / 1,468 output tok/s at
1 / 8 / 32 / 64 streams, TPOT p50 1.94 / 4.84 / 24.2 / 42.5 ms, TTFT p50 36 / 315 / 270 / 331 ms.
TPOT grows 22x over those levels while the bytes of a step grow less than 2x: no bandwidth
efficiency and fixed overhead explain that, and the old fit claimed 4% of the bandwidth and a
16.2 ms step at batch 1 (61.7 tok/s predicted against the 454 measured).
"""
from __future__ import annotations

import json

import pytest

from console import roofline
from console.bench.metrics import RequestRecord, summarize
from console.bench.results import RunStore
from console.roofline.calibrate import MAX_MISS, calibrate, fit
from console.roofline.compare import calibration_text
from console.roofline.runs import load_one_run
from tests.cli import gpudeck

# the config the GPU kit's model maker wrote beside the GGUF (../shared/gpu-kit/make_model.py)
LLAMA_1P7B = {
    "architectures": ["LlamaForCausalLM"], "model_type": "llama", "torch_dtype": "float16",
    "hidden_size": 2048, "intermediate_size": 8192, "num_hidden_layers": 24, "num_attention_heads": 16,
    "num_key_value_heads": 8, "head_dim": 128, "vocab_size": 49152, "max_position_embeddings": 8192,
    "rms_norm_eps": 1e-5, "rope_theta": 100000.0, "tie_word_embeddings": False, "hidden_act": "silu",
    "bos_token_id": 1, "eos_token_id": 2,
}
OUTPUT_LEN = 128
# concurrency: (output tok/s, TPOT p50 ms, TTFT p50 ms), as measured
H200_SWEEP = {1: (454.0, 1.94, 36.0), 8: (1183.0, 4.84, 315.0), 32: (1207.0, 24.2, 270.0), 64: (1468.0, 42.5, 331.0)}


def _level(concurrency: int, tok_s: float, tpot_ms: float, ttft_ms: float) -> dict:
    """One level as the runner records it: request records through the runner's own summary."""
    n = concurrency * 4
    records = [RequestRecord(index=i, ok=True, start=0.0, output_tokens=OUTPUT_LEN, input_tokens=256,
                             chunk_times=[ttft_ms / 1e3 + k * tpot_ms / 1e3 for k in range(OUTPUT_LEN)])
               for i in range(n)]
    level = {"concurrency": concurrency, "status": "ok", "num_prompts": n, "completed": n, "failed": 0,
             "errors": [], "error_counts": {}}
    level.update(summarize(records, n * OUTPUT_LEN / tok_s))
    return level


def _recorded_sweep(profile: str = "e2e"):
    store = RunStore(profile, "sweep-20261204-101500")
    doc = {"run_id": store.run_id, "path": str(store.path), "started": "2026-12-04T10:15:00Z",
           "url": "http://127.0.0.1:8080", "model": "model.gguf", "api": "completions", "profile": profile,
           "workload": {"input_len": 256, "output_len": OUTPUT_LEN, "ignore_eos": True},
           "status": "ok", "finished": "2026-12-04T10:17:10Z",
           "levels": [_level(c, *figures) for c, figures in H200_SWEEP.items()]}
    store.save(doc)
    return store.path


def _roof(tmp_path):
    config = tmp_path / "config.json"
    config.write_text(json.dumps(LLAMA_1P7B))
    return config, roofline.compute(roofline.load_model(config), "H200", 1, context=384, batches=(1, 8, 32, 64))


def test_the_recorded_sweep_reads_back_as_measured(gpudeck_home):
    run = load_one_run(_recorded_sweep())
    assert {c: round(t * 1e3, 3) for c, t, _ in run.tpot_points()} == {1: 1.94, 8: 4.84, 32: 24.2, 64: 42.5}
    assert [round(run.tok_s_at(c)) for c in H200_SWEEP] == [454, 1183, 1207, 1468]


def test_a_line_that_misses_its_own_points_is_no_fit(gpudeck_home, tmp_path):
    _, roof = _roof(tmp_path)
    run = load_one_run(_recorded_sweep())
    outcome = calibrate(roof, run.tpot_points())
    assert outcome.calibration is None and fit(roof, run.tpot_points()) is None
    # the reason names the miss in the run's own terms
    assert outcome.reason is not None and "x off" in outcome.reason and "where" in outcome.reason
    assert outcome.tried is not None and outcome.tried.worst_miss > MAX_MISS
    cal, line = calibration_text(roof, run)
    assert cal is None and line.startswith(f"calibration from {run.name}: no fit (")
    assert "η" not in line and "memory traffic is" not in line and "overhead" not in line.split("no fit")[0]


def test_cli_says_no_fit_and_predicts_nothing(gpudeck_home, tmp_path):
    config, _ = _roof(tmp_path)
    path = _recorded_sweep()
    args = ("roofline", "--model-config", str(config), "--gpu", "H200", "--count", "1", "--batch", "1,8,32,64",
            "--context", "384", "--run", str(path))
    out = gpudeck(*args, "--json", home=gpudeck_home)
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["calibration"] is None and "no fit (" in doc["calibration_note"]
    assert doc["calibration_refused"]["worst_miss"] > MAX_MISS
    text = gpudeck(*args, home=gpudeck_home)
    assert text.returncode == 0, text.stderr
    assert "no fit (" in text.stdout and "fitted tok/s" not in text.stdout
    assert "memory traffic is" not in text.stdout and "per-step overhead is" not in text.stdout


def test_a_line_that_reproduces_its_points_still_fits(tmp_path):
    _, roof = _roof(tmp_path)
    eta, overhead = 0.7, 0.0012
    cal = fit(roof, [(b, roof.step_time_s(b, "ideal") / eta + overhead) for b in (1, 8, 32, 64)])
    assert cal is not None and cal.eta == pytest.approx(eta) and cal.overhead_s == pytest.approx(overhead)
    assert cal.worst_miss == pytest.approx(1.0)


def test_a_flat_overhead_bound_sweep_fits_though_r2_is_low(tmp_path):
    """TPOT the same at every level but for noise: the overhead line is right within 2%, whatever r² says."""
    _, roof = _roof(tmp_path)
    cal = fit(roof, [(1, 0.0500), (8, 0.0510), (32, 0.0495), (64, 0.0505)])
    assert cal is not None and cal.r2 is not None and cal.r2 < 0.9 and cal.worst_miss < 1.02


def test_the_batch_is_what_the_server_said_it_ran_not_the_streams(gpudeck_home, tmp_path):
    """A server with 8 slots under 64 streams steps 8 sequences: its TPOT at c=64 is the batch-8 step.
    The run's level record says so (the server's mean running over the level); a record from before
    that kept the last scrape (the level's tail), which is no batch and is not read as one."""
    _, roof = _roof(tmp_path)
    eta, overhead = 0.7, 0.0012
    tpot = {b: roof.step_time_s(b, "ideal") / eta + overhead for b in (1, 8, 64)}
    store = RunStore("slots", "sweep-20261204-120000")
    levels = [_level(c, c / tpot[b], tpot[b] * 1e3, 5.0) for c, b in ((1, 1), (8, 8), (64, 8))]
    for level, running in zip(levels, (1.0, 7.9, 8.0)):
        level["server"] = {"gen_tps": level["output_throughput"], "running": running, "over": "level",
                           "running_is": "mean busy slots per decode call"}
    store.save({"run_id": store.run_id, "levels": levels})
    run = load_one_run(store.path)
    assert [b for _, _, b in run.tpot_points()] == [1.0, 7.9, 8.0]
    cal = fit(roof, run.tpot_points())
    assert cal is not None and cal.eta == pytest.approx(eta, rel=1e-3) and cal.levels_used == (1, 8, 64)
    # the same levels with only the last scrape's tail (no "over": "level"), or a mean of scrapes (time-
    # weighted, the ramp and tail in it): read at the concurrency
    for server in ({"gen_tps": 0.0, "running": 2.0},
                   {"gen_tps": 1.0, "running": 6.5, "over": "level", "running_is": "mean of the level's scrapes"}):
        for level in levels:
            level["server"] = server
        store.save({"run_id": store.run_id, "levels": levels})
        assert [b for _, _, b in load_one_run(store.path).tpot_points()] == [None, None, None]
    assert fit(roof, load_one_run(store.path).tpot_points()) is None   # c=64 at the batch-8 TPOT: no line fits


def test_a_line_faster_than_the_bandwidth_is_no_fit(tmp_path):
    _, roof = _roof(tmp_path)
    points = [(b, roof.step_time_s(b, "ideal") / 1.6) for b in (1, 8, 32)]
    outcome = calibrate(roof, points)
    assert outcome.calibration is None and "more than the GPUs have" in outcome.reason
