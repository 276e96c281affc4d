"""Launch records: one JSON file per launch under the profile's `servers/`.

A record holds everything needed to re-attach from a fresh console: the
process group, the log path and the file the wrapper writes the exit status
to when the server ends. `save` is the one writer and `read_launches` the one
reader; `load_all`, `get` and `latest_per_config` are views of what it reads.

A record is hostile input like any other file: the reader reads a regular
file under a size cap, checks each field's type and names a bad file in one
`Unreadable` line instead of handing a wrong-typed field to the monitors.
"""
from __future__ import annotations

import json
import os
import re
import tempfile
import time
from dataclasses import asdict, dataclass, field, fields, replace
from enum import StrEnum
from pathlib import Path
from typing import Any, Callable

from profiles import paths
from profiles.atomic import private_dirs, write_atomic

from ..outage_note import OutageNote
from .scan import Scan, json_files, read_json, scan_files
from .slurm_job import SlurmJob

KIND = "launch record"
MAX_RECORD_BYTES = 4 << 20   # a record is a few kB; its flags and Slurm ranks stay far below this
RECORD_ID = re.compile(r"[A-Za-z0-9._-]{1,200}")   # what safe_stem makes: never a path



class LaunchState(StrEnum):
    """A launch's state. Only `console.servers.launch_state` moves a record from one to another
    (its transitions table is in console/README.md); the value is what the record's file holds."""

    LAUNCHING = "launching"
    LOADING = "loading"
    READY = "ready"
    STOPPING = "stopping"
    STOPPED = "stopped"
    CRASHED = "crashed"


# launching -> loading -> ready -> stopping -> stopped, or crashed (from any live state)
LIVE_STATES = (LaunchState.LAUNCHING, LaunchState.LOADING, LaunchState.READY, LaunchState.STOPPING)
STATES = tuple(LaunchState)


@dataclass
class LaunchRecord:
    id: str
    config: str
    script: str | None
    log: str | None
    exit_file: str | None
    pid: int | None = None
    pgid: int | None = None
    started_at: float = field(default_factory=time.time)
    state: LaunchState = LaunchState.LAUNCHING
    ready_at: float | None = None
    stopped_at: float | None = None
    exit_status: int | None = None
    port: int | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    adopted: bool = False
    kill_requested: bool = False
    crash_class: str | None = None
    crash_record: str | None = None
    command: str | None = None
    escaped: list[int] = field(default_factory=list)  # pids still alive after the stop (left the group)
    effective: dict[str, Any] | None = None  # the flags the server's log says it runs with, once seen
    slurm: SlurmJob | None = None  # a Slurm job: job id, nodes, batch host, rank logs (console.slurm.launch)
    unreached: OutageNote | None = None  # live, but its host did not answer the last look (console.servers.unreached)

    def __post_init__(self) -> None:
        self.state = LaunchState(self.state)   # a record built with the state's text reads the same
        if self.slurm is not None:   # a table (a record's file, an older caller) reads as the typed part
            self.slurm = SlurmJob.from_json(self.slurm)
        if self.unreached is not None:
            self.unreached = OutageNote.from_json(self.unreached)
        if self.crash_class is not None:
            from .crashes import crash_class

            # written before the process's end was weighed (`healthy`), or under an older class name
            self.crash_class = crash_class(self.crash_class)

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def shown_state(self) -> str:
        """The state every view shows: `crashed` also for a server alive but judged dead by its log
        or its silence (a hang, an engine error), so the row, the tab title and the chip agree;
        `unknown` for a live Slurm job Slurm has not answered about (console.slurm.unanswered) and
        for a live launch whose host did not answer the last look (console.servers.unreached)."""
        if self.crash_class not in (None, "healthy", "request-error") and (
                self.live or self.state == LaunchState.STOPPED):
            return "crashed"   # a crash judged before the end (a record written before its owner took that in)
        if self.live and self.slurm is not None and self.slurm.unanswered is not None:
            return "unknown"
        if self.live and self.unreached is not None:
            return "unknown"
        return self.state

    @property
    def time_to_ready_s(self) -> float | None:
        return round(self.ready_at - self.started_at, 1) if self.ready_at else None

    def to_doc(self) -> dict[str, Any]:
        """What the record's file holds: every field, the Slurm part and the outage note as tables."""
        doc = asdict(replace(self, slurm=None, unreached=None))
        doc["slurm"] = self.slurm.to_json() if self.slurm is not None else None
        doc["unreached"] = self.unreached.to_json() if self.unreached is not None else None
        return doc

    def to_json(self) -> dict[str, Any]:
        return self.to_doc() | {"time_to_ready_s": self.time_to_ready_s, "shown_state": self.shown_state}

    @classmethod
    def from_doc(cls, doc: Any) -> "LaunchRecord":
        """A record from a parsed file, every field's type checked; ValueError names the first bad one."""
        if not isinstance(doc, dict):
            raise ValueError(f"expected a JSON object, got {type(doc).__name__}")
        for key in ("id", "config"):
            if not isinstance(doc.get(key), str) or not doc[key]:
                raise ValueError(f"{key}: expected text")
        if not RECORD_ID.fullmatch(doc["id"]):
            raise ValueError("id: not a launch id gpudeck writes")
        kept: dict[str, Any] = {"script": None, "log": None, "exit_file": None}
        for f in fields(cls):
            if f.name not in doc or f.name in ("id", "config"):
                continue
            kept[f.name] = _checked(f.name, doc[f.name])
        state = kept.get("state", "launching")
        if state not in STATES:
            raise ValueError(f"state: expected one of {', '.join(STATES)}, got {str(state)[:40]!r}")
        return cls(id=doc["id"], config=doc["config"], **kept)


_TEXT = {"script", "log", "exit_file", "crash_class", "crash_record", "command", "state"}
_WHOLE = {"pid", "pgid", "exit_status", "port"}
_TIME = {"started_at", "ready_at", "stopped_at"}
_TABLE = {"flags", "effective"}
_FLAG = {"adopted", "kill_requested"}


def _checked(key: str, value: Any) -> Any:
    if key == "escaped":
        if not isinstance(value, list) or len(value) > 10_000 or not all(
                isinstance(p, int) and not isinstance(p, bool) and p > 0 for p in value):
            raise ValueError("escaped: expected a list of pids")
        return value
    if key in _FLAG:
        if not isinstance(value, bool):
            raise ValueError(f"{key}: expected true or false")
        return value
    if value is None and key not in ("started_at", "state"):
        return None if key not in ("flags",) else {}
    if key in _TEXT and not isinstance(value, str):
        raise ValueError(f"{key}: expected text, got {type(value).__name__}")
    if key in _WHOLE and (isinstance(value, bool) or not isinstance(value, int)):
        raise ValueError(f"{key}: expected a whole number, got {str(value)[:40]}")
    if key in ("pid", "pgid", "port") and not 0 <= value < 1 << 31:
        raise ValueError(f"{key}: {value} is out of range")
    if key in _TIME and (isinstance(value, bool) or not isinstance(value, (int, float)) or value != value
                         or not 0 <= value < 1e11):
        raise ValueError(f"{key}: expected a time in seconds, got {str(value)[:40]}")
    if key == "slurm":
        return SlurmJob.from_json(value)   # each field checked; not a table: a job with no id to act on
    if key == "effective" and not isinstance(value, dict):
        return None               # the flags the log reports: not seen yet
    if key == "unreached":
        return OutageNote.from_json(value)   # a note gone wrong hides no launch: the next look writes it again
    if key in _TABLE and not isinstance(value, dict):
        raise ValueError(f"{key}: expected a table, got {type(value).__name__}")
    return value


def launches_dir(profile_name: str) -> Path:
    return paths.profile_data_dir(profile_name) / "servers"


def save(profile_name: str, record: LaunchRecord) -> None:
    """The one writer: the whole record, replaced atomically (0600), under a checked name."""
    if not RECORD_ID.fullmatch(record.id):
        raise ValueError(f"launch id {record.id[:80]!r}: not a name gpudeck writes")
    doc = record.to_doc()
    write_atomic(launches_dir(profile_name) / f"{record.id}.json", json.dumps(doc, indent=2) + "\n")


def create(profile_name: str, base_id: str, make: Callable[[str], LaunchRecord]) -> LaunchRecord:
    """A new launch's first save, under an id nobody holds: `base_id`, else `base_id-2`, `-3`…
    The record is linked in place, which fails when the name exists, so two launches of one config
    in the same second never share a record (nor the log and pgid file named after it)."""
    folder = launches_dir(profile_name)
    private_dirs(folder)
    for n in range(1, 1000):
        record = make(base_id if n == 1 else f"{base_id}-{n}")
        if not RECORD_ID.fullmatch(record.id):
            raise ValueError(f"launch id {record.id[:80]!r}: not a name gpudeck writes")
        fd, tmp = tempfile.mkstemp(dir=folder, prefix=".launch-", suffix=".tmp")
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as fh:
                fh.write(json.dumps(record.to_doc(), indent=2) + "\n")
            os.chmod(tmp, 0o600)
            try:
                os.link(tmp, folder / f"{record.id}.json")
                return record
            except FileExistsError:
                continue
        finally:
            try:
                os.unlink(tmp)
            except OSError:
                pass
    raise OSError(f"no free launch id after {base_id} in {folder}")


def read_launches(profile_name: str) -> Scan[LaunchRecord]:
    """The one reader: every record of the profile, newest first; one line per unreadable file."""
    found = scan_files(json_files(launches_dir(profile_name)), KIND,
                       lambda path: LaunchRecord.from_doc(read_json(path, MAX_RECORD_BYTES)))
    found.records.sort(key=lambda r: r.started_at, reverse=True)
    return found


def load_all(profile_name: str) -> list[LaunchRecord]:
    """Every readable record, newest first (`read_launches` also names the unreadable ones)."""
    return read_launches(profile_name).records


def get(profile_name: str, record_id: str | None) -> LaunchRecord | None:
    if not record_id:
        return None
    return next((r for r in load_all(profile_name) if r.id == record_id), None)


def stop_asked_elsewhere(profile_name: str, record: LaunchRecord) -> LaunchRecord | None:
    """The record as saved, when another process (a CLI call, a campaign, another console) asked it
    to stop after this copy was read: a stop is not a crash, and this copy must not overwrite it."""
    if record.kill_requested:
        return None
    on_disk = get(profile_name, record.id)
    return on_disk if on_disk is not None and on_disk.kill_requested else None


def latest_per_config(profile_name: str, found: list[LaunchRecord] | None = None) -> dict[str, LaunchRecord]:
    """The newest record of each config (from `found`, if the caller has already read them)."""
    latest: dict[str, LaunchRecord] = {}
    for record in load_all(profile_name) if found is None else found:
        latest.setdefault(record.config, record)
    return latest
