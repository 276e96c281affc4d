"""The README's walk-through, replayed key by key in a real terminal (tmux) at the two sizes
operators use: a 100x30 split and a 160x45 pane. Launch the crashing config, sweep until it
crashes, open the sweep's timeline, jump to the decisive line with numbers on (the number the view draws is the file's
line number, as `grep -n` counts), find the suggestion, quit, and nothing is left behind.
The 100x30 run starts at 160x45 and is resized once the server is ready: the log, following,
shows the log file's last line after the resize and again when the crash has ended the log."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest

from tests.tmux_term import Term


def _last_line_shown(env_tmp, screen: str) -> bool:
    """Whether the screen shows the crashing config's log's last line (its first 60 characters)."""
    logs = list(env_tmp.glob("gpudeck-demo-*/logs/run_tp8_ep8_crash-*.log"))
    lines = [line.strip() for line in logs[0].read_text(errors="replace").splitlines() if line.strip()] if logs else []
    return bool(lines) and lines[-1][:60] in screen


@pytest.mark.parametrize("size", [(100, 30), (160, 45)], ids=lambda s: f"{s[0]}x{s[1]}")
def test_readme_walkthrough(tmp_path, size):
    start = (160, 45)  # the 100x30 run is resized from here in the middle of the walk-through
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    command = (f"env TMPDIR={env_tmp} GPUDECK_HOME={tmp_path / 'home-not-used'} GPUDECK_SIM_STARTUP_S=0.3 "
               f"GPUDECK_SIM_EFFICIENCY=0.3 {sys.executable} -m console demo")
    term = Term.launch(f"gpudeck-walk-{size[0]}", command, start)
    try:
        term.wait("1 GPUs", "2 Server", "6 Campaign")
        term.resize(start)
        # 1. Server tab: the crashing config, launched through its confirmation
        term.keys("2")
        term.wait("run_tp8_ep8_crash", "l launch")
        term.keys("Down")
        term.wait("log  run_tp8_ep8_crash: never launched")  # the highlighted config is the one `l` launches
        term.keys("l")
        term.wait("Cancel (n)")
        term.keys("y")
        term.wait("● ready", timeout=90)
        term.until(lambda screen: _last_line_shown(env_tmp, screen), "the log's last line", timeout=20)
        if size != start:
            term.resize(size)
            term.until(lambda screen: _last_line_shown(env_tmp, screen), "the log's last line after the resize",
                       timeout=20)
        # 2. Bench tab: models, then the sweep (the first on this host asks first)
        term.keys("3")
        term.wait("run sweep")  # the Bench tab's keys: it has the focus
        term.keys("m")
        term.wait("zai-org/GLM")
        term.keys("r")
        term.wait("Cancel (n)")
        term.keys("y")
        term.wait("✖ cuda-illegal-address", timeout=240)
        # 3. the sweep's timeline: the levels and the death at 256 on one time axis
        term.wait("(finished)", timeout=120)
        term.keys("t")
        term.wait("timeline of sweep-", "c=256", "died", "v next series")
        term.keys("v")
        term.wait("KV %")
        term.keys("Escape")
        term.wait_gone("v next series")
        # 4. Server tab: the crash named, j jumps to its line, # shows numbers
        term.keys("2")
        banner = term.wait("cuda-illegal-address · line", "l launch")
        term.until(lambda screen: _last_line_shown(env_tmp, screen), "the crashed log's last line", timeout=20)
        number = int(re.search(r"cuda-illegal-address · line (\d+)", banner).group(1))
        term.keys("j", "#")
        decisive = re.compile(r"^\s*(\d+) ▶ (.*)$")  # a numbered log row carrying the crash mark
        screen = term.until(lambda screen: any(map(decisive.match, screen.splitlines())),
                            "a numbered row with the crash mark", timeout=20)
        rows = [m for m in map(decisive.match, screen.splitlines()) if m]
        shown, row = int(rows[0].group(1)), rows[0].group(2)
        assert shown == number
        log = next(env_tmp.glob("gpudeck-demo-*/logs/run_tp8_ep8_crash-*.log"))
        grep = subprocess.run(["grep", "-n", "", str(log)], capture_output=True, text=True).stdout.splitlines()
        text = grep[number - 1].split(":", 1)[1]
        assert grep[number - 1].startswith(f"{number}:")
        assert text[:30].strip() in row  # the line drawn at that number is the file's line
        # 5. Tasks tab: the crash's suggestion, in the list
        term.keys("5")
        term.wait("suggested", "a add")
        term.keys("s")
        term.wait("Investigate cuda-illegal-address", "Esc close")  # in the list that opened (the tab names it too)
        term.keys("Escape")
        term.wait_gone("Esc close")  # closed: a q sent with the Escape would read as Alt+q
        term.keys("q")
        assert term.wait_exit(20), f"q did not quit:\n{term.screen()}"
    finally:
        term.close()
    assert list(env_tmp.glob("gpudeck-demo-*")) == [], "the demo left its temp dir behind"
