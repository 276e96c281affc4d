"""gpudeck in a real terminal for the tests: a detached tmux session on its own server, read as
an operator reads it (the screen's text), driven by keys, and waited on for what it shows.

    term = Term.launch("gpudeck-demo", f"{sys.executable} -m console demo", (160, 45))
    try:
        term.wait("1 GPUs", "2 Server")
        term.keys("2")
    finally:
        term.close()

Keys go out at once, in order. A key whose effect the next one depends on (a tab to open, a
dialog to close, an Escape that would otherwise join the next key as Alt+key) is followed by a
wait on what the screen shows after it, never by a pause.
"""
from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest
from tests.tiers import reaches

ROOT = Path(__file__).resolve().parent.parent


@reaches("tmux")
def tmux_binary() -> str:
    path = shutil.which("tmux")
    if not path:
        pytest.fail("tmux not found: install it with `apt-get install tmux` (tests/run.sh does as root)",
                    pytrace=False)
    return path


def sized_by_the_terminal() -> dict[str, str]:
    """This process's environment without COLUMNS and LINES, so the program in the pane reads its
    size from the terminal. GNU readline (imported by pytest's debugger support) exports both into
    the C environment at 80x24; a child started with the inherited environment then draws at 80x24
    in a 160x45 pane, since `shutil.get_terminal_size` believes the variables first."""
    return {k: v for k, v in os.environ.items() if k not in ("COLUMNS", "LINES")}


class Term:
    """One tmux server (`-L name`) holding one session of the same name."""

    def __init__(self, tmux: str, session: str) -> None:
        self.cmd = [tmux, "-L", session]
        self.session = session

    @classmethod
    def launch(cls, name: str, command: str, size: tuple[int, int]) -> Term:
        """Start `command` in a detached session `name-<pid>` of `size` (columns, rows), from the
        repository root."""
        tmux = tmux_binary()
        session = f"{name}-{os.getpid()}"
        subprocess.run([tmux, "-L", session, "new-session", "-d", "-s", session, "-x", str(size[0]),
                        "-y", str(size[1]), command], check=True, cwd=ROOT, env=sized_by_the_terminal())
        return cls(tmux, session)

    def keys(self, *keys: str) -> None:
        for key in keys:
            subprocess.run([*self.cmd, "send-keys", "-t", self.session, key], check=True)

    def screen(self) -> str:
        return subprocess.run([*self.cmd, "capture-pane", "-t", self.session, "-p"], capture_output=True,
                              text=True).stdout

    def until(self, predicate, what: str, timeout: float = 60.0) -> str:
        """Poll the screen until `predicate(screen)` holds; fail naming `what` with the last screen."""
        deadline = time.monotonic() + timeout
        while True:
            screen = self.screen()
            if predicate(screen):
                return screen
            if time.monotonic() >= deadline:
                raise AssertionError(f"screen never showed {what} within {timeout:g}s:\n{screen}")
            time.sleep(0.1)

    def wait(self, *needles: str, timeout: float = 60.0) -> str:
        """The screen once it shows every one of `needles`."""
        return self.until(lambda screen: all(n in screen for n in needles), f"{list(needles)}", timeout)

    def wait_gone(self, needle: str, timeout: float = 30.0) -> str:
        """The screen once `needle` has left it."""
        return self.until(lambda screen: needle not in screen, f"{needle!r} gone", timeout)

    def resize(self, size: tuple[int, int], timeout: float = 10.0) -> None:
        """Make the window `size` (a detached session can start at tmux's 80x24) and wait until
        the app has redrawn across it."""
        subprocess.run([*self.cmd, "resize-window", "-t", self.session, "-x", str(size[0]), "-y", str(size[1])],
                       check=True)
        self.until(lambda screen: max(map(len, screen.splitlines()), default=0) >= size[0] - 2,
                   f"a screen {size[0]} columns wide", timeout)

    def alive(self) -> bool:
        return subprocess.run([*self.cmd, "has-session", "-t", self.session], capture_output=True).returncode == 0

    def wait_exit(self, timeout: float = 20.0) -> bool:
        """Whether the session (the app in it) ended within `timeout`."""
        deadline = time.monotonic() + timeout
        while self.alive():
            if time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def close(self) -> None:
        subprocess.run([*self.cmd, "kill-server"], capture_output=True)
