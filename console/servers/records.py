"""Launch records: one JSON file per launch under the profile's `servers/`.

A record holds everything needed to re-attach from a fresh console: the
process group, the log path and the file the wrapper writes the exit status
to when the server ends.
"""
from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from profiles import paths
from profiles.atomic import write_atomic

# launching -> loading -> ready -> stopping -> stopped, or crashed (from any live state)
LIVE_STATES = ("launching", "loading", "ready", "stopping")
STATES = (*LIVE_STATES, "stopped", "crashed")


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
    state: str = "launching"
    ready_at: float | None = None
    stopped_at: float | None = None
    exit_status: int | None = None
    port: int | None = None
    flags: dict = field(default_factory=dict)
    adopted: bool = False
    kill_requested: bool = False
    crash_class: str | None = None
    crash_record: str | None = None
    command: str | None = None
    escaped: list[int] = field(default_factory=list)  # pids still alive after the stop (left the group)
    effective: dict | None = None  # the flags the server's log says it runs with, once seen
    slurm: dict | None = None  # a Slurm job: job id, nodes, batch host, rank logs (console.slurm.launch)

    def __post_init__(self) -> None:
        if self.crash_class is not None:
            from console.store.crashes import crash_class

            # written before the process's end was weighed (`healthy`), or under an older class name
            self.crash_class = crash_class(self.crash_class)

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    @property
    def shown_state(self) -> str:
        """The state every view shows: `crashed` also for a server alive but judged dead by its log
        or its silence (a hang, an engine error), so the row, the tab title and the chip agree."""
        return "crashed" if self.live and self.crash_class else self.state

    @property
    def time_to_ready_s(self) -> float | None:
        return round(self.ready_at - self.started_at, 1) if self.ready_at else None

    def to_json(self) -> dict:
        return asdict(self) | {"time_to_ready_s": self.time_to_ready_s, "shown_state": self.shown_state}


def records_dir(profile_name: str) -> Path:
    return paths.profile_data_dir(profile_name) / "servers"


def save(profile_name: str, record: LaunchRecord) -> None:
    doc = asdict(record)
    write_atomic(records_dir(profile_name) / f"{record.id}.json", json.dumps(doc, indent=2) + "\n")


def load_all(profile_name: str) -> list[LaunchRecord]:
    """Every readable record, newest first (`scan` also lists the unreadable ones)."""
    return scan(profile_name)[0]


def scan(profile_name: str) -> tuple[list[LaunchRecord], list[str]]:
    out: list[LaunchRecord] = []
    bad: list[str] = []
    folder = records_dir(profile_name)
    if not folder.is_dir():
        return out, bad
    known = set(LaunchRecord.__dataclass_fields__)
    for path in folder.glob("*.json"):
        try:
            doc = json.loads(path.read_text())
            if not isinstance(doc, dict):
                raise TypeError("not a JSON object")
            out.append(LaunchRecord(**({"script": None, "log": None, "exit_file": None}
                                       | {k: v for k, v in doc.items() if k in known})))
        except (OSError, ValueError, TypeError) as exc:
            bad.append(f"{path}: unreadable launch record ({exc})")
    out.sort(key=lambda r: r.started_at, reverse=True)
    return out, bad


def get(profile_name: str, record_id: str | None) -> LaunchRecord | None:
    if not record_id:
        return None
    return next((r for r in load_all(profile_name) if r.id == record_id), None)


def latest_per_config(profile_name: str, found: list[LaunchRecord] | None = None) -> dict[str, LaunchRecord]:
    """The newest record of each config (from `found`, if the caller has already scanned)."""
    latest: dict[str, LaunchRecord] = {}
    for record in load_all(profile_name) if found is None else found:
        latest.setdefault(record.config, record)
    return latest
