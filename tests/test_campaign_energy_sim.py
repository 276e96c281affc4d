"""Tokens per joule on the simulated 8-GPU host: every level carries its figure, marked SIMULATED, in the
state, the table, the frontier (`campaign show --json`) and the report."""
from __future__ import annotations

import json
import os

import pytest

from tests.cli import gpudeck
from tests.test_campaign import _nothing_left_running


@pytest.mark.slow
@pytest.mark.timeout(400)
def test_each_simulated_level_has_its_tokens_per_joule_marked_simulated(tmp_path, monkeypatch):
    from console import demo

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    try:
        campaign = tmp_path / "campaign.toml"
        campaign.write_text('[sweep]\nlevels = [1, 16]\ninput_len = 128\noutput_len = 48\nprompts_per_stream = 2\n'
                            'repeats = 1\n\n[[config]]\nname = "run_tp8_cds16"\n\n'
                            '[policy]\nready_timeout_s = 120\ngpu_idle_timeout_s = 30\n')
        out = gpudeck("campaign", "run", str(campaign), "-p", "demo", "--foreground", "--json", timeout=360)
        assert out.returncode == 0, out.stderr[-3000:]
        doc = json.loads(out.stdout)
        _nothing_left_running("demo")
        levels = doc["cells"][0]["rounds"][0]["levels"]
        for lv in levels:
            e = lv["energy"]
            print(lv["concurrency"], lv["output_throughput"], e)
            assert e["source"] == "SIMULATED" and e["tok_per_j"] > 0 and e["gpus"] == 8, e
            # eight RTX PRO 6000s (idle 34 W, limit 600 W each, as the simulator models them) under load
            assert 8 * 34 <= e["avg_power_w"] <= 8 * 600, e
            assert e["tok_per_j"] == pytest.approx(lv["output_throughput"] / e["avg_power_w"], rel=0.25)
        shown = json.loads(gpudeck("campaign", "show", doc["id"], "-p", "demo", "--json", timeout=120).stdout)
        points = shown["frontier"]["points"]
        assert points and all(p["z"] > 0 and p["z_source"] == "SIMULATED" for p in points)
        assert shown["frontier"]["z_label"] == "output tokens per joule"
        table = gpudeck("campaign", "show", doc["id"], "-p", "demo", timeout=120).stdout
        assert "output tokens per joule" in table and "tok/J at" in table and "(SIMULATED)" in table
        report = tmp_path / "findings.md"
        made = gpudeck("report", "-p", "demo", "--out", str(report), "--offline", timeout=120)
        assert made.returncode == 0, made.stderr[-2000:]
        text = report.read_text()
        assert "output tokens per joule" in text and "tok/J, SIMULATED" in text
    finally:
        world.close()
