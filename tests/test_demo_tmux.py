"""`gpudeck demo` in a real terminal: tmux at 160x45, read as an operator would."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent


def _tmux() -> str:
    path = shutil.which("tmux")
    if not path:
        pytest.fail("tmux not found: install it with `apt-get install tmux` (tests/run.sh does as root)",
                    pytrace=False)
    return path


def test_demo_opens_in_tmux_and_leaves_nothing_behind(tmp_path):
    tmux = _tmux()
    session = f"gpudeck-demo-{os.getpid()}"
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    gpudeck = f"{sys.executable} -m console demo"
    command = f"env TMPDIR={env_tmp} GPUDECK_HOME={tmp_path / 'home-not-used'} {gpudeck}"
    subprocess.run([tmux, "-L", session, "new-session", "-d", "-s", session, "-x", "160", "-y", "45", command],
                   check=True, cwd=ROOT)
    tmux_l = [tmux, "-L", session]
    try:
        screen = _wait_for_l(tmux_l, session, ["gpudeck", "demo", "SIMULATED", "GPUs", "Server", "Bench",
                                               "Roofline", "Tasks"])
        assert "q quit" in screen
        subprocess.run([*tmux_l, "send-keys", "-t", session, "5"], check=True)
        screen = _wait_for_l(tmux_l, session, ["Complete theoretical max single-stream perf analysis",
                                               "Try flashinfer_cutedsl MoE backend"])
        subprocess.run([*tmux_l, "send-keys", "-t", session, "2"], check=True)
        screen = _wait_for_l(tmux_l, session, ["run_tp8_cds16", "run_tp8_ep8_memsafe", "run_tp8_ep8_crash"])
        subprocess.run([*tmux_l, "send-keys", "-t", session, "q"], check=True)
        deadline = time.monotonic() + 15
        while time.monotonic() < deadline and _alive(tmux_l, session):
            time.sleep(0.2)
    finally:
        subprocess.run([*tmux_l, "kill-server"], capture_output=True)
    assert list(env_tmp.glob("gpudeck-demo-*")) == [], "the demo left its temp dir behind"
    assert not (tmp_path / "home-not-used").exists(), "the demo wrote into the operator's GPUDECK_HOME"


def _wait_for_l(tmux_l: list[str], session: str, needles: list[str], timeout: float = 40.0) -> str:
    deadline = time.monotonic() + timeout
    screen = ""
    while time.monotonic() < deadline:
        screen = subprocess.run([*tmux_l, "capture-pane", "-t", session, "-p"], capture_output=True,
                                text=True).stdout
        if all(n in screen for n in needles):
            return screen
        time.sleep(0.3)
    raise AssertionError(f"screen never showed {needles}:\n{screen}")


def _alive(tmux_l: list[str], session: str) -> bool:
    return subprocess.run([*tmux_l, "has-session", "-t", session], capture_output=True).returncode == 0
