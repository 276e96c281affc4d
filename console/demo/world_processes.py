"""The processes a demo world started, told apart from everything else on the machine, and ended.

A process is the world's when its environment proves it: it names the world's launch permit
(`console.servers.launch_permit`, a path inside the world's own temporary folder, so no other
world and no real launch shares it) and either carries a launch mark (`GPUDECK_LAUNCH_ID`: the
server half the launch wrapper starts, and everything that half starts) or is the launch wrapper
itself (`sh -c ... gpudeck-wrapper`). Another user's process never shows us its environment.

No pid is taken from a file here: a `.pgid` file or a launch record names a number, and the
number may belong to a group not made yet (the wrapper between its fork and `setsid`) or to a
stranger by now. Each process is held through a pidfd while it is proven and signalled, so a pid
reused in between is never reached. Plain system calls only: the demo's signal handler calls this.
"""
from __future__ import annotations

import os
import signal
import time
from dataclasses import dataclass

from ..servers.launch_permit import ENV as PERMIT_ENV

LAUNCH_MARK = b"GPUDECK_LAUNCH_ID="
WRAPPER_NAME = b"gpudeck-wrapper"   # the wrapper's $0 (lifecycle.launch)
MAX_ENVIRON = 4 << 20               # a process's environment is a few kB; far past this is not ours


@dataclass(frozen=True)
class Found:
    servers: list[int]    # carry the launch mark: ended with SIGKILL, their group with them
    wrappers: list[int]   # the launch wrappers: they end once their server has, and write its exit


def _read(path: str, cap: int) -> bytes | None:
    try:
        with open(path, "rb") as fh:
            return fh.read(cap)
    except OSError:
        return None


def kind(pid: int, permit: str) -> str | None:
    """What the process is to the world: a marked "server" process, its launch "wrapper", or None
    (not this world's, gone, a zombie, or another user's)."""
    environ = _read(f"/proc/{pid}/environ", MAX_ENVIRON)
    if not environ:             # a zombie shows an empty environment: it has ended
        return None
    entries = environ.split(b"\0")
    if PERMIT_ENV.encode() + b"=" + permit.encode() not in entries:
        return None
    if any(entry.startswith(LAUNCH_MARK) for entry in entries):
        return "server"
    argv = (_read(f"/proc/{pid}/cmdline", 1 << 16) or b"").split(b"\0")
    if len(argv) > 3 and argv[1] == b"-c" and argv[3] == WRAPPER_NAME:
        return "wrapper"
    return None


def find(permit: str) -> Found:
    """Every live process of the world named by its permit."""
    servers, wrappers = [], []
    me = os.getpid()
    try:
        entries = os.listdir("/proc")
    except OSError:
        return Found([], [])
    for entry in entries:
        if not entry.isdigit() or int(entry) == me:
            continue
        found = kind(int(entry), permit)
        if found == "server":
            servers.append(int(entry))
        elif found == "wrapper":
            wrappers.append(int(entry))
    return Found(servers, wrappers)


def _leads_group(pid: int) -> bool:
    stat = _read(f"/proc/{pid}/stat", 4096) or b""
    fields = stat[stat.rfind(b")") + 2:].split()
    return len(fields) > 2 and fields[2] == str(pid).encode()


def kill(pid: int, permit: str, expected: str) -> bool:
    """SIGKILL one process proven the world's (`expected` kind), and its whole group when it leads
    one: the group was made by a process of the world, so every member descends from it."""
    pidfd_open = getattr(os, "pidfd_open", None)
    send = getattr(signal, "pidfd_send_signal", None)
    try:
        fd = pidfd_open(pid) if pidfd_open and send else None
    except OSError:
        return False            # gone already
    try:
        if kind(pid, permit) != expected:   # proven while held: a reused pid fails here
            return False
        if expected == "server" and _leads_group(pid):
            os.killpg(pid, signal.SIGKILL)  # the leader is alive and held, so the group is its
        if fd is not None:
            send(fd, signal.SIGKILL)
        else:
            os.kill(pid, signal.SIGKILL)
        return True
    except (ProcessLookupError, PermissionError):
        return False
    finally:
        if fd is not None:
            os.close(fd)


def end_servers(permit: str, wait_s: float = 5.0) -> list[int]:
    """Kill every marked process of the world until none is left (a process forked meanwhile is
    found on the next pass); the pids killed. Bounded: one stuck in the kernel is left."""
    killed: list[int] = []
    deadline = time.monotonic() + wait_s
    while True:
        servers = find(permit).servers
        if not servers or time.monotonic() > deadline:
            return killed
        for pid in servers:
            if kill(pid, permit, "server") and pid not in killed:
                killed.append(pid)
        time.sleep(0.02)


def end_wrappers(permit: str, wait_s: float = 3.0) -> list[int]:
    """Give the world's launch wrappers `wait_s` to write their servers' exit status and end (a
    wrapper not started yet when the permit was revoked starts nothing and ends too); then kill
    what is left. The pids killed."""
    deadline = time.monotonic() + wait_s
    while find(permit).wrappers and time.monotonic() < deadline:
        time.sleep(0.02)
    left = find(permit).wrappers
    return [pid for pid in left if kill(pid, permit, "wrapper")]
