"""Feasibility before launch: a config whose weights + KV cache cannot fit its GPUs' memory is skipped,
with the reason in numbers, and never launched; told to try anyway, it is not skipped."""
from __future__ import annotations

import json
import os
from pathlib import Path
import pytest

from console.campaign.feasible import Fit, fit
from tests.cli import gpudeck


def _setup():
    """The demo's model (GLM-5 NVFP4) on 8 RTX PRO 6000s, as the roofline sees it."""
    from console.roofline.from_profile import Inputs, compute_inputs
    from console.sim import data as sim_data

    config = Path(sim_data.__path__[0]) / "GLM-5-NVFP4.config.json"
    return compute_inputs(Inputs(config=str(config), gpu="RTX PRO 6000 Blackwell", count=8), batches=[1]).setup


def test_the_reason_says_what_is_needed_and_what_the_fraction_leaves():
    found = Fit(needed_gb=701.4, available_gb=8 * 96 * 0.85, gpus=8, gpu_gb=96, fraction=0.85, streams=256,
                context=8192)
    assert not found.fits
    assert found.text() == ("cannot fit: needs 701 GB (weights + KV for 256 × 8192 tokens), "
                            "8×96 GB × 0.85 leaves 653")


def test_the_fraction_comes_from_the_flags_and_vllm_defaults_to_0_9():
    setup = _setup()
    sg = fit(setup, {"tp": 8, "mem_fraction": 0.85, "context_length": 8192}, streams=64, context=136, server="sglang")
    assert sg.fraction == 0.85 and sg.context == 8192 and sg.gpus == 8
    assert round(sg.available_gb) == round(8 * setup.gpu.memory_gb * 0.85)
    more = fit(setup, {"tp": 8, "mem_fraction": 0.85, "context_length": 8192}, streams=128, context=136,
               server="sglang")
    kv64 = sg.needed_gb - setup.totals.stored_bytes_gpu * 8 / 1e9
    assert kv64 > 0 and abs((more.needed_gb - sg.needed_gb) - kv64) < 1e-6 * sg.needed_gb   # KV grows with streams
    vl = fit(setup, {"tp": 8}, streams=64, context=136, server="vllm")
    assert vl.fraction == 0.9 and vl.context == 136
    llama = fit(setup, {"tp": 8, "context_length": 8192}, streams=128, context=136, server="llama.cpp")
    assert llama.needed_gb < more.needed_gb     # -c tokens in all, shared by the slots


@pytest.mark.timeout(300)
def test_the_simulated_8_gpu_host_skips_a_config_that_cannot_fit_without_launching_it(tmp_path, monkeypatch):
    from console import demo

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    try:
        script = world.root / "scripts" / "run_tp8_long.sh"
        script.write_text((world.root / "scripts" / "run_tp8_cds16.sh").read_text()
                          .replace("--mem-fraction-static 0.85", "--mem-fraction-static 0.85 --context-length 200000"))
        script.chmod(0o755)
        campaign = tmp_path / "campaign.toml"
        campaign.write_text('[sweep]\nlevels = [256]\ninput_len = 128\noutput_len = 8\nrepeats = 1\n\n'
                            '[[config]]\nname = "run_tp8_long"\n\n[policy]\nready_timeout_s = 60\n')
        out = gpudeck("campaign", "run", str(campaign), "-p", "demo", "--foreground", "--json", timeout=240)
        doc = json.loads(out.stdout)
        cell = doc["cells"][0]
        assert cell["status"] == "skipped" and cell["launch_id"] is None, cell
        assert cell["note"].startswith("cannot fit: needs ") and "256 × 200000 tokens" in cell["note"]
        assert "8×103 GB × 0.85 leaves 698" in cell["note"] and "try_infeasible" in cell["note"]
        shown = gpudeck("campaign", "show", doc["id"], "-p", "demo", timeout=120).stdout
        assert "cannot fit: needs" in shown
    finally:
        world.close()
