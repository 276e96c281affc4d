"""A campaign on disk: its cells and their states, saved after every step; the host lock.

    <profile data>/campaigns/<id>/state.json     the spec, every cell, the campaign's status
    <profile data>/campaigns/<id>/scripts/       each derived script, exactly as it ran
    <profile data>/campaigns/<id>/driver.log     what the detached runner printed
    <profile data>/campaigns/lock.json           who drives this host now (one campaign at a time)

A reboot or a `kill -9` loses nothing that finished: `resume` reads state.json,
keeps every finished cell, and redoes the one that was in progress.
"""
from __future__ import annotations

import json
import os
import socket
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from profiles import paths
from profiles.atomic import private_dirs, write_atomic

from ..pids import pid_alive

# A cell moves queued -> launching -> waiting -> sweeping -> stopping -> done;
# it ends instead as start-failed, crashed, interrupted or skipped.
IN_PROGRESS = ("launching", "waiting", "sweeping", "stopping")
FINISHED = ("done", "crashed", "start-failed", "skipped", "interrupted")
CELL_STATES = ("queued", *IN_PROGRESS, *FINISHED)
CAMPAIGN_STATES = ("running", "finished", "stopped", "failed")


@dataclass
class Cell:
    name: str
    base: str                          # the launch config it comes from
    flags: dict = field(default_factory=dict)   # grid values ({} for a plain [[config]])
    status: str = "queued"
    attempts: int = 0
    script: str | None = None          # the script's path on the host
    launch_id: str | None = None
    run_id: str | None = None
    crash_class: str | None = None
    crash_record: str | None = None
    note: str = ""
    levels: list[dict] = field(default_factory=list)   # one summary per level, as the sweep reported it
    live: dict | None = None           # the running level: concurrency, second, tok/s of the last second
    rounds: list[dict] = field(default_factory=list)   # each finished visit: its levels, run, conditions, time
    pruned: str = ""                   # why repeats stopped early (clearly behind the leader)
    started_at: float | None = None
    ended_at: float | None = None

    def to_json(self) -> dict:
        return asdict(self)


@dataclass
class CampaignState:
    id: str
    profile: str
    spec: dict
    cells: list[Cell]
    status: str = "running"
    created_at: float = field(default_factory=time.time)
    updated_at: float = field(default_factory=time.time)
    finished_at: float | None = None
    driver_pid: int | None = None
    driver_host: str | None = None
    note: str = ""

    @property
    def dir(self) -> Path:
        return campaign_dir(self.profile, self.id)

    def cell(self, name: str) -> Cell:
        return next(c for c in self.cells if c.name == name)

    @property
    def finished_cells(self) -> int:
        """How many cells have ended, however (the count `campaign list` and the Campaign tab show)."""
        return sum(1 for c in self.cells if c.status in FINISHED)

    def to_json(self) -> dict:
        doc = asdict(self)
        doc["cells"] = [c.to_json() for c in self.cells]
        return doc


def campaigns_dir(profile: str) -> Path:
    return paths.profile_data_dir(profile) / "campaigns"


def campaign_file(profile: str) -> Path:
    """The campaign kept with the profile: what `campaign run` and the Campaign tab start by default."""
    return paths.profile_data_dir(profile) / "campaign.toml"


def campaign_dir(profile: str, campaign_id: str) -> Path:
    return campaigns_dir(profile) / campaign_id


def new_id(profile: str, now: float | None = None) -> str:
    """campaign-YYYYmmdd-HHMMSS, with a suffix when that directory exists (made with O_EXCL semantics)."""
    stamp = time.strftime("%Y%m%d-%H%M%S", time.localtime(now or time.time()))
    base = campaigns_dir(profile)
    private_dirs(base)
    for n in range(1000):
        cid = f"campaign-{stamp}" + (f"-{n}" if n else "")
        try:
            (base / cid).mkdir(mode=0o700)
            return cid
        except FileExistsError:
            continue
    raise OSError(f"cannot create a campaign directory under {base}")


def save(state: CampaignState) -> None:
    state.updated_at = time.time()
    write_atomic(state.dir / "state.json", json.dumps(state.to_json(), indent=1) + "\n", mode=0o600)


def load(profile: str, campaign_id: str) -> CampaignState:
    path = campaign_dir(profile, campaign_id) / "state.json"
    try:
        doc = json.loads(path.read_text())
        cells = [Cell(**{k: v for k, v in c.items() if k in Cell.__dataclass_fields__}) for c in doc["cells"]]
        known = set(CampaignState.__dataclass_fields__) - {"cells"}
        return CampaignState(cells=cells, **{k: v for k, v in doc.items() if k in known})
    except FileNotFoundError:
        raise LookupError(f"no campaign {campaign_id!r} in profile {profile!r}") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: unreadable campaign state ({exc})") from None


def list_all(profile: str) -> tuple[list[CampaignState], list[str]]:
    out, bad = [], []
    base = campaigns_dir(profile)
    if not base.is_dir():
        return out, bad
    for entry in sorted(base.iterdir()):
        if entry.is_dir() and (entry / "state.json").exists():
            try:
                out.append(load(profile, entry.name))
            except ValueError as exc:
                bad.append(str(exc))
    return out, bad


# ---------------------------------------------------------------- the host lock

def is_driver(pid: int | None, campaign_id: str) -> bool:
    """Is `pid` really this campaign's driver on this machine? (Read from /proc, never assumed.)"""
    if not pid_alive(pid):
        return False
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
    except OSError:
        return False
    return b"campaign" in cmdline and campaign_id.encode() in cmdline


class LockHeld(Exception):
    """Another campaign drives this host; the message names it and its owner."""


def acquire_lock(profile: str, campaign_id: str, pid: int | None = None) -> None:
    path = campaigns_dir(profile) / "lock.json"
    private_dirs(path.parent)
    doc = {"campaign": campaign_id, "pid": pid or os.getpid(), "host": socket.gethostname(), "since": time.time()}
    for _ in range(2):
        try:
            fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        except FileExistsError:
            try:
                held = json.loads(path.read_text())
            except (OSError, ValueError):
                held = {}
            same_machine = held.get("host") == socket.gethostname()
            if held.get("campaign") == campaign_id and (held.get("pid") == doc["pid"] or not pid_alive(held.get("pid"))):
                path.unlink(missing_ok=True)          # our own lock, left by an earlier driver of this campaign
                continue
            if same_machine and not pid_alive(held.get("pid")):
                path.unlink(missing_ok=True)          # its driver is gone: the lock is stale
                continue
            since = time.strftime("%H:%M:%S", time.localtime(held.get("since", 0)))
            raise LockHeld(f"profile {profile} is driven by campaign {held.get('campaign')} "
                           f"(pid {held.get('pid')} on {held.get('host')}, since {since})") from None
        with os.fdopen(fd, "w") as fh:
            json.dump(doc, fh)
        return
    raise LockHeld(f"cannot take the campaign lock of profile {profile}")


def release_lock(profile: str, campaign_id: str) -> None:
    path = campaigns_dir(profile) / "lock.json"
    try:
        held = json.loads(path.read_text())
    except (OSError, ValueError):
        return
    if held.get("campaign") == campaign_id:
        path.unlink(missing_ok=True)
