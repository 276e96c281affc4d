"""The README's walk-through, replayed key by key in a real terminal (tmux) at the two sizes
operators use: a 100x30 split and a 160x45 pane. Launch the crashing config, sweep until it
crashes, jump to the decisive line with numbers on (the number the view draws is the file's
line number, as `grep -n` counts), find the suggestion, quit, and nothing is left behind."""
from __future__ import annotations

import os
import re
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


class Term:
    def __init__(self, tmux: str, session: str) -> None:
        self.cmd = [tmux, "-L", session]
        self.session = session

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run([*self.cmd, "send-keys", "-t", self.session, key], check=True)
            time.sleep(0.3)

    def screen(self) -> str:
        return subprocess.run([*self.cmd, "capture-pane", "-t", self.session, "-p"], capture_output=True,
                              text=True).stdout

    def wait(self, *needles: str, timeout: float = 60.0) -> str:
        deadline = time.monotonic() + timeout
        screen = ""
        while time.monotonic() < deadline:
            screen = self.screen()
            if all(n in screen for n in needles):
                return screen
            time.sleep(0.3)
        raise AssertionError(f"screen never showed {needles}:\n{screen}")

    def alive(self) -> bool:
        return subprocess.run([*self.cmd, "has-session", "-t", self.session], capture_output=True).returncode == 0


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_readme_walkthrough(tmp_path, size):
    tmux = _tmux()
    session = f"gpudeck-walk-{os.getpid()}-{size[0]}"
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    command = (f"env -u COLUMNS -u LINES TMPDIR={env_tmp} GPUDECK_HOME={tmp_path / 'home-not-used'} GPUDECK_SIM_STARTUP_S=0.3 "
               f"GPUDECK_SIM_EFFICIENCY=0.3 {sys.executable} -m console demo")
    subprocess.run([tmux, "-L", session, "new-session", "-d", "-s", session, "-x", str(size[0]),
                    "-y", str(size[1]), command], check=True, cwd=ROOT)
    term = Term(tmux, session)
    try:
        term.wait("1 GPUs", "2 Server", "6 Campaign")
        # a detached session can start at tmux's default 80x24: make the size the one under test
        subprocess.run([*term.cmd, "resize-window", "-t", session, "-x", str(size[0]), "-y", str(size[1])],
                       check=True)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and max(map(len, term.screen().splitlines())) < size[0] - 2:
            time.sleep(0.2)
        # 1. Server tab: the crashing config, launched through its confirmation
        term.keys("2")
        term.wait("run_tp8_ep8_crash")
        term.keys("Down", "l")
        term.wait("Cancel (n)")
        term.keys("y")
        term.wait("● ready", timeout=90)
        # 2. Bench tab: models, then the sweep (the first on this host asks first)
        term.keys("3", "m")
        term.wait("zai-org/GLM")
        term.keys("r")
        term.wait("Cancel (n)")
        term.keys("y")
        term.wait("✖ cuda-illegal-address", timeout=240)
        # 3. Server tab: the crash named, j jumps to its line, # shows numbers
        term.keys("2")
        banner = term.wait("cuda-illegal-address · line")
        number = int(re.search(r"cuda-illegal-address · line (\d+)", banner).group(1))
        term.keys("j", "#")
        decisive = re.compile(r"^\s*(\d+) ▶ (.*)$")  # a numbered log row carrying the crash mark
        deadline = time.monotonic() + 20
        rows: list = []
        while not rows and time.monotonic() < deadline:
            rows = [m for m in map(decisive.match, term.screen().splitlines()) if m]
            time.sleep(0.3)
        assert rows, term.screen()
        shown, row = int(rows[0].group(1)), rows[0].group(2)
        assert shown == number
        log = next(env_tmp.glob("gpudeck-demo-*/logs/run_tp8_ep8_crash-*.log"))
        grep = subprocess.run(["grep", "-n", "", str(log)], capture_output=True, text=True).stdout.splitlines()
        text = grep[number - 1].split(":", 1)[1]
        assert grep[number - 1].startswith(f"{number}:")
        assert text[:30].strip() in row  # the line drawn at that number is the file's line
        # 4. Tasks tab: the crash's suggestion, in the list
        term.keys("5")
        term.wait("suggested")
        term.keys("s")
        term.wait("Investigate cuda-illegal-address")
        term.keys("Escape", "q")
        deadline = time.monotonic() + 20
        while time.monotonic() < deadline and term.alive():
            time.sleep(0.2)
        assert not term.alive(), "q did not quit"
    finally:
        subprocess.run([*term.cmd, "kill-server"], capture_output=True)
    assert list(env_tmp.glob("gpudeck-demo-*")) == [], "the demo left its temp dir behind"
