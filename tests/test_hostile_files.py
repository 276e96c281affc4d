"""Files at gpudeck's paths, or handed to it, that are no regular file of a sane size: a FIFO, a
device, a sparse file of gigabytes. Each is one line naming it; nothing waits on it or reads it whole."""
from __future__ import annotations

import os
import subprocess
import sys

import pytest



def _gpudeck(*args):
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True, timeout=60)


@pytest.mark.parametrize("kind", ["device", "fifo"])
def test_triage_refuses_what_is_not_a_regular_file(tmp_path, kind):
    target = "/dev/zero"
    if kind == "fifo":
        target = str(tmp_path / "server.log")
        os.mkfifo(target)
    out = _gpudeck("triage", target)
    assert out.returncode == 1 and out.stdout == ""
    assert out.stderr.strip().splitlines() == [f"gpudeck: {target}: not a regular file"]
