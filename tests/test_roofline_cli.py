"""`gpudeck roofline` as a user runs it: JSON contract, text, profiles, one-line errors."""
from __future__ import annotations

import json

import pytest
from tests.cli import gpudeck

GLM = ["--model-config", "{cfg}/GLM-5-NVFP4.json", "--quant-config", "{cfg}/GLM-5-NVFP4.hf_quant_config.json",
       "--gpu", "NVIDIA RTX PRO 6000 Blackwell Server Edition", "--count", "8", "--tp", "8"]


@pytest.fixture
def cfg(shared_dir):
    return str(shared_dir / "model-configs")


def test_json_contract(cfg):
    out = gpudeck("roofline", *[a.format(cfg=cfg) for a in GLM], "--measured", "10.36", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["model"]["total_params"] > 7e11 and doc["model"]["active_params"] > 4e10
    assert doc["ideal"]["single_stream_tok_s"] == pytest.approx(324.4, rel=0.01)
    assert doc["realistic"]["single_stream_tok_s"] < doc["ideal"]["single_stream_tok_s"]
    assert [lv["batch"] for lv in doc["levels"]] == [1, 2, 10, 64, 256, 512]
    for lv in doc["levels"]:
        for key in ("tok_s_ideal", "tok_s_realistic", "t_mem_ms", "t_compute_ms", "t_comm_ms", "bound"):
            assert key in lv
    assert isinstance(doc["assumptions"], dict) and doc["assumptions"]["kv_cache_dtype"] == "fp8"
    assert doc["efficiency_pct"] == pytest.approx(3.19, abs=0.05)
    assert 0 < doc["mbu_pct"] < 100


def test_text_headline(cfg):
    out = gpudeck("roofline", *[a.format(cfg=cfg) for a in GLM], "--measured", "10.36")
    assert out.returncode == 0, out.stderr
    first = out.stdout.splitlines()[0]
    assert first.startswith("single stream  10.36 / 3") and "of the ideal roofline" in first
    assert "assumptions" in out.stdout


def test_quant_config_found_beside_config(tmp_path, cfg):
    import shutil

    shutil.copy(f"{cfg}/GLM-5-NVFP4.json", tmp_path / "config.json")
    shutil.copy(f"{cfg}/GLM-5-NVFP4.hf_quant_config.json", tmp_path / "hf_quant_config.json")
    out = gpudeck("roofline", "--model", str(tmp_path), "--gpu", "rtx pro 6000", "--count", "8", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["quant"]["method"] == "nvfp4"


@pytest.mark.parametrize("args,needle,code", [
    (["--model-config", "{cfg}/nope.json", "--gpu", "H100", "--count", "1"], "not found", 1),
    (["--model-config", "{cfg}/Llama-3.1-8B.json", "--gpu", "Voodoo2", "--count", "1"], "unknown GPU", 1),
    (["--model-config", "{cfg}/Llama-3.1-8B.json", "--gpu", "H100", "--count", "8", "--tp", "3"], "tp 3", 1),
    (["--model-config", "{cfg}/Llama-3.1-8B.json", "--gpu", "H100", "--count", "1", "--quant", "fp3"], "fp3", 1),
    (["--model-config", "{cfg}/Llama-3.1-8B.json", "--gpu", "H100", "--count", "1", "--batch", "1,x"], "--batch", 2),
    (["--model-config", "{cfg}/Llama-3.1-8B.json", "--count", "1"], "no GPU", 2),
    (["--gpu", "H100", "--count", "1"], "no model", 2),
    (["--model-config", "{cfg}/Llama-3.1-8B.json", "--gpu", "H100", "--count", "x"], "invalid int", 2),
])
def test_bad_input_is_one_line(cfg, args, needle, code):
    out = gpudeck("roofline", *[a.format(cfg=cfg) for a in args], "--json")
    assert out.returncode == code
    assert out.stdout == ""
    assert len(out.stderr.strip().splitlines()) == 1 and needle in out.stderr


def test_partial_config_names_the_field(tmp_path):
    bad = tmp_path / "config.json"
    bad.write_text(json.dumps({"hidden_size": 4096, "num_hidden_layers": 32, "vocab_size": 1000}))
    out = gpudeck("roofline", "--model-config", str(bad), "--gpu", "H100", "--count", "1")
    assert out.returncode == 1
    assert out.stderr.strip().count("\n") == 0 and "'num_attention_heads'" in out.stderr


def test_profile_supplies_model_and_gpu(cfg, gpudeck_home):

    from profiles import store
    from profiles.profile import profile_from_dict

    store.save(profile_from_dict("rtx6000", {
        "transport": "local",
        "model": {"config": f"{cfg}/GLM-5-NVFP4.json", "quant_config": f"{cfg}/GLM-5-NVFP4.hf_quant_config.json",
                  "kv_dtype": "fp8"},
        "gpu": {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "count": 8},
    }))
    out = gpudeck("roofline", "--profile", "rtx6000", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["count"] == 8 and doc["tp"] == 8 and doc["quant"]["method"] == "nvfp4"
    assert doc["ideal"]["single_stream_tok_s"] == pytest.approx(324.4, rel=0.01)


def test_cli_finds_the_quant_config_of_a_name_dot_config_json_and_agrees_with_the_tui():
    """The simulator's packaged pair: GLM-5-NVFP4.config.json + GLM-5-NVFP4.hf_quant_config.json."""
    from pathlib import Path

    from console.roofline.from_profile import Inputs, compute_inputs

    data = Path(__file__).parents[1] / "console" / "sim" / "data"
    args = ["--model-config", str(data / "GLM-5-NVFP4.config.json"), "--gpu", "rtx pro 6000", "--count", "8"]
    out = gpudeck("roofline", *args, "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["quant"]["method"] == "nvfp4" and doc["quant"]["source"].endswith("GLM-5-NVFP4.hf_quant_config.json")
    tui = compute_inputs(Inputs(config=str(data / "GLM-5-NVFP4.config.json"), gpu="rtx pro 6000", count=8))
    assert doc["ideal"]["single_stream_tok_s"] == pytest.approx(tui.single_stream_ideal, rel=1e-9)
    text = gpudeck("roofline", *args)
    assert "quant: nvfp4 from " in text.stdout and "GLM-5-NVFP4.hf_quant_config.json" in text.stdout


def test_cli_says_when_the_quantisation_comes_from_inside_the_config(shared_dir):
    out = gpudeck("roofline", "--model-config", str(shared_dir / "model-configs" / "DeepSeek-V3.json"), "--gpu", "H200",
                  "--count", "8")
    assert out.returncode == 0, out.stderr
    assert "quant: fp8 from " in out.stdout and "quantization_config" in out.stdout
    plain = gpudeck("roofline", "--model-config", str(shared_dir / "model-configs" / "Llama-3.1-8B.json"), "--gpu", "H100",
                    "--count", "1")
    assert "quant: none found" in plain.stdout


def test_profile_calibrates_against_its_latest_sweep(cfg, gpudeck_home):

    from console.bench.results import runs_dir
    from profiles import store
    from profiles.profile import profile_from_dict

    store.save(profile_from_dict("rtx6000", {
        "transport": "local",
        "model": {"config": f"{cfg}/GLM-5-NVFP4.json", "quant_config": f"{cfg}/GLM-5-NVFP4.hf_quant_config.json"},
        "gpu": {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "count": 8},
    }))
    folder = runs_dir("rtx6000")
    folder.mkdir(parents=True)
    levels = [{"concurrency": c, "status": "ok", "output_throughput": c / t, "tpot_ms": {"median": t * 1e3}}
              for c, t in ((1, 0.0963), (2, 0.0984), (10, 0.105))]
    (folder / "sweep-20260101-000000.json").write_text(json.dumps({"run_id": "sweep-20260101-000000", "levels": levels}))
    out = gpudeck("roofline", "--profile", "rtx6000", "--json")
    assert out.returncode == 0, out.stderr
    cal = json.loads(out.stdout)["calibration"]
    assert cal["run"] == "sweep-20260101-000000" and cal["levels_used"] == [1, 2, 10]
    assert set(cal) >= {"eta", "overhead_ms", "r2", "levels_used"}
    assert 80 < cal["overhead_ms"] < 100 and cal["dominant"].startswith("per-step overhead is 9")
    text = gpudeck("roofline", "--profile", "rtx6000")
    assert "calibration from run sweep-20260101-000000: eta " in text.stdout and "fitted tok/s" in text.stdout


def test_run_id_is_found_where_bench_list_finds_it_without_a_profile(cfg, gpudeck_home):
    """`bench --list` lists the last-used profile's runs (else 'local'); `roofline --run ID` finds the same
    run with no -p (it said "no such run")."""
    from console.bench.results import runs_dir

    folder = runs_dir("local")
    folder.mkdir(parents=True)
    levels = [{"concurrency": c, "status": "ok", "output_throughput": c / t, "tpot_ms": {"median": t * 1e3}}
              for c, t in ((1, 0.0963), (2, 0.0984), (10, 0.105))]
    (folder / "sweep-20260101-000000.json").write_text(json.dumps({"run_id": "sweep-20260101-000000", "levels": levels}))
    listed = json.loads(gpudeck("bench", "--list", "--json").stdout)
    assert [r["run_id"] for r in listed["runs"]] == ["sweep-20260101-000000"]
    out = gpudeck("roofline", *[a.format(cfg=cfg) for a in GLM], "--run", "sweep-20260101-000000", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert "sweep-20260101-000000" in json.dumps([doc.get("calibration"), doc.get("calibration_note")])
