"""Tab keys typed at once in a real terminal (tmux sends the three digits in one write, as a
paste does): the last one's tab is the one shown."""
from __future__ import annotations

import sys

from tests.tmux_term import Term

BENCH = "no sweep yet: fill in the setup and press Start (r)"   # the Bench tab's first line
SERVER = "config                 state"                          # the Server tab's table header


def _bench_only(screen: str) -> bool:
    return BENCH in screen and SERVER not in screen


def test_three_tab_keys_sent_in_one_write_end_on_the_last(tmp_path):
    env_tmp = tmp_path / "tmp"
    env_tmp.mkdir()
    command = f"env TMPDIR={env_tmp} GPUDECK_HOME={tmp_path / 'home-not-used'} {sys.executable} -m console demo"
    term = Term.launch("gpudeck-tabkeys", command, (160, 45))
    try:
        term.wait("gpudeck", "demo", "6 Campaign", "≤", timeout=40)   # the Roofline tab's ceiling: started
        for keys in ("253", "453"):
            term.keys(keys)
            term.until(_bench_only, f"{' '.join(keys)} ending on the Bench tab", timeout=30)
            term.keys("?")   # the keys panel names the tab on screen, after the keys before it are handled
            screen = term.wait("Everywhere", timeout=30)
            assert "Bench tab" in screen, f"{' '.join(keys)}: another tab took the screen back:\n{screen}"
            term.keys("Escape")
            term.wait_gone("Everywhere")
            term.keys("1")
            term.until(lambda s: BENCH not in s, "the GPUs tab", timeout=30)
        term.keys("q")
        assert term.wait_exit(15), "q did not quit"
    finally:
        term.close()
