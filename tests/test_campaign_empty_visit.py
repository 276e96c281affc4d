"""A cell whose server says it is ready but whose sweep measures nothing (the load generator
finds the port closed) is start-failed with the reason, never `done` with an empty repeat."""
from __future__ import annotations

import json
import shlex

from tests.cli import gpudeck
from tests.realparts import free_port
from tests.test_campaign import _nothing_left_running


def test_a_sweep_that_measured_nothing_is_no_repeat(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    port = free_port()
    fake = tmp_path / "bin" / "llama-server"   # says it listens, listens nowhere
    fake.parent.mkdir()
    fake.write_text(f"#!/bin/sh\necho 'main: server is listening on http://127.0.0.1:{port} - starting the main loop'\n"
                    "exec sleep 600\n")
    fake.chmod(0o755)
    (scripts / "deaf.sh").write_text(f"#!/bin/sh\nexec {shlex.quote(str(fake))} -m /models/smol.gguf --port {port}\n")
    (scripts / "deaf.sh").chmod(0o755)
    assert gpudeck("profiles", "add", "box", "--local", "--scripts-dir", str(scripts),
                   "--log-dir", str(tmp_path / "logs"), timeout=240).returncode == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text('[sweep]\nlevels = [1]\noutput_len = 8\nnum_prompts = 1\nrepeats = 2\n\n'
                        '[[config]]\nname = "deaf"\n\n[policy]\nready_timeout_s = 60\ngpu_idle_timeout_s = 5\n')
    out = gpudeck("campaign", "run", str(campaign), "-p", "box", "--foreground", "--json", timeout=240)
    assert out.returncode == 0, out.stderr[-3000:]
    cell = json.loads(out.stdout)["cells"][0]
    assert cell["status"] == "start-failed" and cell["rounds"] == [], cell
    assert cell["note"].startswith("the sweep measured nothing: not started") and "connection refused" in cell["note"]
    _nothing_left_running("box")
