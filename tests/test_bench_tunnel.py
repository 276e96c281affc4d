"""`gpudeck bench -p REMOTE --url http://127.0.0.1:PORT` tunnels over SSH, as the TUI does (issue 13.2)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from tests.cli import gpudeck

ROOT = Path(__file__).resolve().parent.parent


def test_cli_sweep_on_a_remote_profile_goes_through_the_ssh_tunnel(ssh_profile, llama_server, gpudeck_home):
    out = gpudeck("-p", ssh_profile.name, "bench", "--url", llama_server.url, "--concurrency", "1", "--num-prompts",
                  "2", "--warmup", "0", "--input-len", "8", "--output-len", "8", "--events", timeout=240)
    assert out.returncode == 0, out.stderr
    events = [json.loads(line) for line in out.stdout.splitlines()]
    start, end = events[0], events[-1]
    assert start["tunnelled"] is True
    # the run names the server's own URL, never the tunnel's throwaway local port
    assert start["url"] == llama_server.url
    doc = json.loads(Path(end["path"]).read_text())
    assert doc["tunnelled"] is True and doc["url"] == llama_server.url
    assert doc["config"]["url"] == llama_server.url and doc["config"]["server_port"] == llama_server.port
    assert Path(end["path"]).parent == gpudeck_home / "data" / "profiles" / ssh_profile.name / "runs"
    assert doc["levels"][0]["status"] == "ok" and doc["levels"][0]["completed"] == 2


def test_local_profile_never_tunnels(llama_server, gpudeck_home):
    out = subprocess.run([sys.executable, "-m", "console.bench", "--url", llama_server.url, "--concurrency", "1",
                          "--num-prompts", "1", "--warmup", "0", "--input-len", "4", "--output-len", "4", "--json"],
                         cwd=ROOT, capture_output=True, text=True, timeout=240, env=os.environ.copy())
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["tunnelled"] is False
