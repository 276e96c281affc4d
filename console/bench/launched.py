"""Ties a sweep to the server gpudeck launched: its launch config and, after a death, its crash record.

Launch records live in the profile's `servers/`, crash records in
`crashes/` (both written by console.servers). A server launched some other
way simply has no record: the run then says nothing about its config.
"""
from __future__ import annotations

import time

from console.fmt import clock
from console.store import launches
from console.store.crashes import crash_of_launch, read_crashes


def launch_for_port(profile: str, port: int | None) -> launches.LaunchRecord | None:
    """The newest live launch record serving `port`, if gpudeck launched that server."""
    if port is None:
        return None
    for record in launches.load_all(profile):
        if record.port == port and record.live:
            return record
    return None


def launch_summary(record: launches.LaunchRecord | None) -> dict | None:
    if record is None:
        return None
    return {"config": record.config, "flags": record.flags, "launch": record.id, "pid": record.pid}


def death_details(profile: str, launch_id: str | None, since: float) -> dict:
    """What gpudeck knows about the death: the pid that exited and the crash record, when any.

    The pid is given only when its record says the process ended: a record
    still marked live says nothing either way (over SSH a lost link looks
    like a death; console.bench.linkcheck asks the host itself).
    """
    out: dict = {"pid": None, "exit_status": None, "crash_record": None}
    if launch_id:
        for record in launches.load_all(profile):
            if record.id == launch_id:
                out["pid"] = record.pid if not record.live or record.exit_status is not None else None
                out["exit_status"] = record.exit_status
                if record.crash_record:
                    out["crash_record"] = record.crash_record
                break
    if out["crash_record"] is None:
        if launch_id is not None:   # the store's one lookup of a launch's crash (its id is the launch's)
            crash = crash_of_launch(profile, launch_id)
        else:
            crash = next((c for c in read_crashes(profile).records if _epoch(c.time) >= since - 5), None)
        if crash is not None:
            out["crash_record"] = crash.id  # the crash record's one id
    return out


def _epoch(stamp: str | None) -> float:
    try:
        return time.mktime(time.strptime(stamp or "", "%Y-%m-%dT%H:%M:%S%z"))
    except ValueError:
        return 0.0


def operator_stop(profile: str, launch_id: str | None) -> str | None:
    """When the operator stopped that server (console or `gpudeck server stop`): the time, HH:MM:SS."""
    if not launch_id:
        return None
    for record in launches.load_all(profile):
        if record.id == launch_id:
            if record.kill_requested and record.state in ("stopping", "stopped"):
                return clock(record.stopped_at or time.time())
            return None
    return None
