"""The first defect of the walk: the demo's crashing config, swept by a campaign, read two ways.

The simulated server dies with an illegal address at 256 streams; the campaign sees the level
fail and stops the server at once, so the stop was asked for when the process ended. The launch
record then read `stopped` (its crash class set by the log afterwards), and the findings report
said `Last state: stopped` while the Server tab showed the crash. Every view reads the record
the owner wrote: the record, `server status --json` and the report all say crashed.
"""
from __future__ import annotations

import json
import os

import pytest

from tests.cli import gpudeck


@pytest.mark.timeout(300)
@pytest.mark.slow
def test_a_crash_the_campaign_stopped_reads_crashed_in_the_record_the_cli_and_the_report(tmp_path, monkeypatch):
    from console import demo
    from console.store import launches

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_SIM_EFFICIENCY", "0.3")
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    campaign = tmp_path / "campaign.toml"
    campaign.write_text("[sweep]\nlevels = [256]\ninput_len = 128\noutput_len = 64\nprompts_per_stream = 1\n"
                        "repeats = 1\n\n[[config]]\nname = \"run_tp8_ep8_crash\"\n\n"
                        "[policy]\nready_timeout_s = 120\non_crash = \"continue\"\ngpu_idle_timeout_s = 30\n")
    try:
        out = gpudeck("campaign", "run", str(campaign), "-p", "demo", "--foreground", "--json", timeout=240)
        assert out.returncode == 0, out.stderr[-3000:]
        cell = json.loads(out.stdout)["cells"][0]
        assert cell["status"] == "crashed" and cell["crash_class"] == "cuda-illegal-address"

        record = launches.latest_per_config("demo")["run_tp8_ep8_crash"]
        assert record.crash_class == "cuda-illegal-address"
        assert record.state == "crashed" and record.shown_state == "crashed", record.to_json()

        status = json.loads(gpudeck("server", "status", "-p", "demo", "--json", timeout=120).stdout)
        shown = {s["id"]: s for s in status["servers"]}[record.id]
        assert shown["state"] == shown["shown_state"] == "crashed"

        findings = tmp_path / "findings.md"
        written = gpudeck("report", "-p", "demo", "--offline", "--out", str(findings), timeout=120)
        assert written.returncode == 0, written.stderr[-2000:]
        section = findings.read_text().split("### run_tp8_ep8_crash", 1)[1].split("###", 1)[0]
        assert "Last state: crashed" in section, section
    finally:
        world.close()
