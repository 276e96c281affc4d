"""`gpudeck demo` in a real terminal: tmux at 160x45, read as an operator would."""
from __future__ import annotations

import sys

from tests.tmux_term import Term


def test_demo_opens_in_tmux_and_leaves_nothing_behind(tmp_path):
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    command = f"env TMPDIR={env_tmp} GPUDECK_HOME={tmp_path / 'home-not-used'} {sys.executable} -m console demo"
    term = Term.launch("gpudeck-demo", command, (160, 45))
    try:
        screen = term.wait("gpudeck", "demo", "SIMULATED", "GPUs", "Server", "Bench", "Roofline", "Tasks",
                           timeout=40)
        assert "q quit" in screen
        term.keys("5")
        term.wait("Complete theoretical max single-stream perf analysis", "Try flashinfer_cutedsl MoE backend",
                  timeout=40)
        term.keys("2")
        term.wait("run_tp8_cds16", "run_tp8_ep8_memsafe", "run_tp8_ep8_crash", timeout=40)
        term.keys("q")
        assert term.wait_exit(15), "q did not quit"
    finally:
        term.close()
    assert list(env_tmp.glob("gpudeck-demo-*")) == [], "the demo left its temp dir behind"
    assert not (tmp_path / "home-not-used").exists(), "the demo wrote into the operator's GPUDECK_HOME"
