"""One campaign at a time per host and port, whichever profile names the host.

Two profiles can point at one machine (an alias and an address, or two local
profiles), so the lock is keyed by what the machine is, not by the profile:
the SSH host key it offers (its fingerprint), or this machine's id for a local
profile, together with the port the campaign's servers answer on. A campaign
whose port is not known before its scripts are read ("any") holds the whole
host.

    <data>/campaign-locks/<identity digest>/<port or "any">.json

A lock names its campaign, profile, driver pid and the driver's start time;
one whose driver is gone (or whose pid now belongs to a later process) is
stale and taken over. Checking and taking happen under an flock, so two
drivers starting at once never both win.
"""
from __future__ import annotations

import fcntl
import hashlib
import json
import os
import socket
import time
from contextlib import contextmanager
from pathlib import Path
from urllib.parse import urlsplit

from profiles import paths
from profiles.atomic import private_dirs, write_atomic

from ..fmt import clock
from ..pids import pid_alive
from .driver import start_ticks
from ..store.files import FileRefused, read_capped


class LockHeld(Exception):
    """Another campaign drives this host and port; the message names it and its owner."""


def machine_id() -> str:
    """This machine's id (systemd's /etc/machine-id), else its host name."""
    for path in ("/etc/machine-id", "/var/lib/dbus/machine-id"):
        try:
            text = read_capped(path, 4096).decode("ascii", "replace").strip()
        except (OSError, FileRefused):
            continue
        if text and all(c in "0123456789abcdef" for c in text.lower()):
            return text.lower()
    return "hostname:" + socket.gethostname()


def local_identity() -> str:
    return "machine:" + machine_id()


async def host_identity(profile) -> str:
    """What the profile's machine is: its host key's fingerprint over SSH, this machine's id locally."""
    if profile.transport != "ssh":
        return local_identity()
    from ..hosts.ssh import fetch_host_key

    _target, key = await fetch_host_key(profile)     # HostError (one line) when the host cannot be reached
    return "ssh-host-key:" + key.get_fingerprint()


def lock_port(profile, spec: dict) -> int | None:
    """The port the campaign's servers answer on, when the campaign file or the profile says; else None."""
    url = ((spec or {}).get("sweep") or {}).get("url") or getattr(profile.server, "url", None)
    if not url:
        return None
    try:
        parts = urlsplit(url)
        return parts.port or {"http": 80, "https": 443}.get(parts.scheme)
    except ValueError:
        return None


def locks_dir(identity: str) -> Path:
    return paths.data_dir() / "campaign-locks" / hashlib.sha256(identity.encode()).hexdigest()[:32]


@contextmanager
def _guard(folder: Path):
    fd = os.open(folder / ".guard", os.O_RDWR | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0), 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _read(path: Path) -> dict | None:
    try:
        doc = json.loads(read_capped(path, 64 << 10))
    except (OSError, FileRefused, ValueError, RecursionError):
        return None
    return doc if isinstance(doc, dict) else None


def _alive(held: dict) -> bool:
    """Does the lock's driver still run? (One on another machine sharing this data dir is taken as alive.)"""
    if held.get("host") != socket.gethostname():
        return True
    pid, start = held.get("pid"), held.get("pid_start")
    return pid_alive(pid) and (start is None or start_ticks(pid) == start)


def _conflicts(folder: Path, port_name: str, campaign_id: str | None, profile: str,
               pid: int | None) -> None:
    """LockHeld when a live lock of another driver covers this port; stale locks are removed."""
    for path in sorted(folder.glob("*.json")):
        held = _read(path)
        if held is None or not _alive(held):
            path.unlink(missing_ok=True)           # unreadable (written under the guard, so not half-written) or stale
            continue
        if held.get("campaign") == campaign_id and held.get("pid") == pid:
            continue                               # our own (a --hosts campaign may reach one machine by two profiles)
        if "any" in (path.stem, port_name) or path.stem == port_name:
            since = clock(held["since"] if isinstance(held.get("since"), (int, float))
                          and not isinstance(held.get("since"), bool) else None)
            where = "this host" if path.stem == "any" else f"port {path.stem} of this host"
            raise LockHeld(f"{where} is driven by campaign {str(held.get('campaign'))[:80]} of profile "
                           f"{str(held.get('profile'))[:80]} (pid {held.get('pid')}, since {since}); "
                           "one campaign at a time per host and port")


def check_free(identity: str, port: int | None, profile: str, campaign_id: str | None = None) -> None:
    """LockHeld at once when another campaign drives the host and port (nothing is taken)."""
    folder = locks_dir(identity)
    private_dirs(folder)
    with _guard(folder):
        _conflicts(folder, str(port) if port else "any", campaign_id, profile, None)


def acquire(identity: str, port: int | None, campaign_id: str, profile: str, pid: int | None = None) -> None:
    pid = pid or os.getpid()
    folder = locks_dir(identity)
    private_dirs(folder)
    name = str(port) if port else "any"
    with _guard(folder):
        _conflicts(folder, name, campaign_id, profile, pid)
        write_atomic(folder / f"{name}.json", json.dumps({
            "campaign": campaign_id, "profile": profile, "pid": pid, "pid_start": start_ticks(pid),
            "host": socket.gethostname(), "identity": identity, "since": time.time()}) + "\n")


def release(identity: str, port: int | None, campaign_id: str, pid: int | None = None) -> None:
    pid = pid or os.getpid()
    folder = locks_dir(identity)
    path = folder / f"{str(port) if port else 'any'}.json"
    if not folder.is_dir():
        return
    with _guard(folder):
        held = _read(path)
        if held is not None and held.get("campaign") == campaign_id and held.get("pid") == pid:
            path.unlink(missing_ok=True)


async def take(profile, spec: dict, campaign_id: str) -> tuple[str, int | None]:
    """Lock the profile's machine and port for a campaign; the key `release` needs back.
    HostError when the machine can't be told, LockHeld when another campaign drives it."""
    identity = await host_identity(profile)
    port = lock_port(profile, spec)
    acquire(identity, port, campaign_id, profile.name)
    return identity, port
