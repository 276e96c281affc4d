"""A tmux session watched through tmux's control mode: when did the screen first show X?

Polling `tmux capture-pane` from a subprocess costs a process per look and
sees the screen only as often as it polls. Control mode instead streams a
`%output` line for every write the program in the pane makes, and takes
commands (send-keys, capture-pane) on the same pipe. So a key is sent, and
the screen is captured only after each burst of output: the time of the burst
after which the screen first shows the marker is when the key's effect
reached the terminal. Used by tui_keys.py and first_frame.py.
"""
from __future__ import annotations

import itertools
import os
import queue
import shutil
import subprocess
import threading
import time


_SERVERS = itertools.count()


class Probe:
    """One tmux server and session of `width` x `height` running `command`."""

    def __init__(self, command: str, width: int = 160, height: int = 45, env: dict | None = None,
                 cwd: str | None = None):
        tmux = shutil.which("tmux")
        if not tmux:
            raise SystemExit("tmux not found (apt-get install tmux)")
        # a socket of its own: a probe made as the last one closes must not reach that server
        self.socket = f"gpudeck-probe-{os.getpid()}-{next(_SERVERS)}"
        self.session = "probe"
        self.base = [tmux, "-L", self.socket]
        # the size is the session's own: the control client must not shrink the window to 80x24
        subprocess.run([*self.base, "-f", "/dev/null", "new-session", "-d", "-s", self.session,
                        "-x", str(width), "-y", str(height), command], check=True, env=env, cwd=cwd)
        subprocess.run([*self.base, "set-option", "-g", "window-size", "manual"], check=True)
        self.client = subprocess.Popen([*self.base, "-C", "attach-session", "-t", self.session],
                                       stdin=subprocess.PIPE, stdout=subprocess.PIPE, bufsize=0)
        self.lines: queue.Queue[tuple[float, bytes]] = queue.Queue()
        self.last_output = 0.0  # the latest %output seen, by whichever reader
        threading.Thread(target=self._read, daemon=True).start()
        self._command(f"refresh-client -C {width}x{height}")

    def _read(self) -> None:
        for line in iter(self.client.stdout.readline, b""):
            self.lines.put((time.perf_counter(), line.rstrip(b"\n")))

    def _command(self, text: str, timeout: float = 10.0) -> tuple[list[bytes], float]:
        """Run one tmux command; its output lines, and the time of the last %output seen meanwhile."""
        self.client.stdin.write(text.encode() + b"\n")
        body: list[bytes] = []
        inside = False
        last_output = 0.0
        deadline = time.perf_counter() + timeout
        while True:
            t, line = self.lines.get(timeout=max(0.01, deadline - time.perf_counter()))
            if line.startswith(b"%begin"):
                inside = True
            elif inside and (line.startswith(b"%end") or line.startswith(b"%error")):
                return body, last_output
            elif inside:
                body.append(line)
            elif line.startswith(b"%output"):
                last_output = self.last_output = t

    def screen(self) -> str:
        body, _ = self._command(f"capture-pane -p -t {self.session}")
        return b"\n".join(body).decode("utf-8", "replace")

    def send(self, key: str) -> float:
        """Send one key; the time it went."""
        t0 = time.perf_counter()
        self._command(f"send-keys -t {self.session} {key}")
        return t0

    def wait_for(self, markers: list[str], since: float, timeout: float = 30.0) -> float:
        """Seconds from `since` to the end of the output burst after which the screen shows every marker."""
        deadline = time.perf_counter() + timeout
        # output that came while the key itself was being sent was read there
        last = self.last_output if self.last_output > since else since
        while time.perf_counter() < deadline:
            try:
                t, line = self.lines.get(timeout=0.05)
            except queue.Empty:
                if last == since:
                    continue  # nothing drawn yet; a capture now would only see the old screen
                t, line = last, b""
            if line.startswith(b"%output"):
                last = self.last_output = t
                while True:  # the rest of this burst, as far as it has come
                    try:
                        t, line = self.lines.get_nowait()
                    except queue.Empty:
                        break
                    if line.startswith(b"%output"):
                        last = t
            body, seen = self._command(f"capture-pane -p -t {self.session}")
            text = b"\n".join(body).decode("utf-8", "replace")
            if all(m in text for m in markers):
                return last - since
            last = max(last, seen)
        raise TimeoutError(f"the screen never showed {markers}:\n{self.screen()}")

    def pid(self) -> int:
        """The pid of the program in the pane."""
        body, _ = self._command(f"display-message -p -t {self.session} '#{{pane_pid}}'")
        return int(body[0])

    def close(self) -> None:
        try:
            self.client.stdin.close()
        except OSError:
            pass
        subprocess.run([*self.base, "kill-server"], capture_output=True)
        try:
            self.client.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.client.kill()


def cpu_seconds(pid: int) -> float:
    """utime + stime of one process, from /proc (Linux)."""
    with open(f"/proc/{pid}/stat") as f:
        fields = f.read().rpartition(")")[2].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")
