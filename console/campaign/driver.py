"""Which local process is a campaign's driver, proven rather than guessed.

A pid alone proves nothing: it is a number in a file anyone can edit, and
pids are reused. A driver is ours when three things agree: the pid is alive,
its start time (/proc/PID/stat, clock ticks after boot) is the one recorded
when it started, and its environment carries the random token written at
spawn. Another user's process never shows us its environment, and an
unrelated process of ours never carries the token, so a forged `driver_pid`
is never signalled.
"""
from __future__ import annotations

import os
import secrets
import signal

from ..pids import pid_alive

TOKEN_ENV = "GPUDECK_CAMPAIGN_TOKEN"


def new_token() -> str:
    return secrets.token_hex(16)


def start_ticks(pid: int | None) -> int | None:
    """The process's start time in clock ticks after boot, or None when it cannot be read."""
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return None
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            fields = fh.read().rsplit(b")", 1)[1].split()
        return int(fields[19])
    except (OSError, IndexError, ValueError):
        return None


def environ_token(pid: int) -> str | None:
    """The campaign token in the process's environment (None when absent or not ours to read)."""
    try:
        with open(f"/proc/{pid}/environ", "rb") as fh:
            entries = fh.read(1 << 20).split(b"\0")
    except OSError:
        return None
    prefix = TOKEN_ENV.encode() + b"="
    for entry in entries:
        if entry.startswith(prefix):
            return entry[len(prefix):].decode("ascii", "replace")
    return None


def own_token() -> str | None:
    """This process's token, when it was spawned as a driver (a foreground run has none)."""
    token = os.environ.get(TOKEN_ENV)
    return token if token and environ_token(os.getpid()) == token else None


def is_driver(pid: int | None, start: int | None, token: str | None) -> bool:
    """pid alive, started when recorded, and carrying the token: this campaign's driver."""
    if pid is None or not token or start is None or not pid_alive(pid):
        return False
    return start_ticks(pid) == start and environ_token(pid) == token


def signal_driver(pid: int | None, start: int | None, token: str | None, sig: int = signal.SIGTERM) -> bool:
    """Signal the driver only once it is proven; through a pidfd where there is one, so a pid
    reused between the proof and the signal is never reached. False when not proven."""
    if pid is None or not is_driver(pid, start, token):
        return False
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    if pidfd_open is None or send is None:
        os.kill(pid, sig)
        return True
    try:
        fd = pidfd_open(pid)
    except OSError:
        return False
    try:
        if not is_driver(pid, start, token):   # the process the fd holds is the proven one
            return False
        send(fd, sig)
        return True
    finally:
        os.close(fd)
