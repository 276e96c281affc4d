"""`campaign run --hosts a,b`: plain profiles each run one cell at a time, the results merge into one campaign."""
from __future__ import annotations

import json
import shlex

from tests.cli import gpudeck
from tests.realparts import free_port, llama_server_binary, smollm_model
from tests.test_slurm_campaign import most_at_once


def test_two_hosts_take_the_cells_one_at_a_time_each(gpudeck_home, tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    names = ["a", "b", "c"]
    for name in names:
        (scripts / f"{name}.sh").write_text(
            f"#!/bin/sh\nexec {shlex.quote(str(llama_server_binary()))} -m {shlex.quote(str(smollm_model()))} "
            f"--host 127.0.0.1 --port {free_port()} -c 512 -t 1 --parallel 1\n")
    for host in ("h1", "h2"):
        assert gpudeck("profiles", "add", host, "--local", "--scripts-dir", str(scripts),
                       "--log-dir", str(tmp_path / f"logs-{host}"), timeout=300).returncode == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text("[sweep]\nlevels = [1]\ninput_len = 16\noutput_len = 8\nnum_prompts = 2\nrepeats = 1\n\n"
                        + "".join(f'[[config]]\nname = "{n}"\n\n' for n in names)
                        + "[policy]\nready_timeout_s = 120\ngpu_idle_timeout_s = 5\n")
    assert gpudeck("campaign", "run", str(campaign), "-p", "h1", "--hosts", "h1,nope", timeout=300).returncode == 2
    out = gpudeck("campaign", "run", str(campaign), "-p", "h1", "--hosts", "h1,h2", "--foreground", "--json", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout)
    cells = doc["cells"]
    assert doc["status"] == "finished" and [c["name"] for c in cells] == names
    for cell in cells:
        assert cell["status"] == "done", cell
        assert cell["levels"][0]["status"] == "ok" and cell["levels"][0]["output_throughput"] > 0
    assert {c["node"] for c in cells} == {"h1", "h2"} and most_at_once(cells) == 2
    from console.store import launches

    launched = {h: [r.config for r in launches.load_all(h)] for h in ("h1", "h2")}
    assert sorted(launched["h1"] + launched["h2"]) == names  # each cell launched on the host that ran it
    assert all(c["name"] in launched[c["node"]] for c in cells)
    assert not any(r.live for h in ("h1", "h2") for r in launches.load_all(h))
