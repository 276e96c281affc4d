"""A live job Slurm did not answer about: its state is unknown now, never taken for ended.

When `scontrol` does not answer (slurmctld down, the login node unreachable,
the client missing), the record keeps its last state but carries
`slurm["unanswered"] = {"since": when, "error": why}`, so every view shows
it as `unknown` (`LaunchRecord.shown_state`) and says why; the next answer
removes it. The record is saved only when the note appears or its reason
changes, not on every failed poll.
"""
from __future__ import annotations

from .. import outage_note
from ..store.launches import LaunchRecord

KEY = "unanswered"


def note(record: LaunchRecord) -> dict | None:
    """The record's note, its fields checked (the file is read as untrusted); None when it has none."""
    return outage_note.checked(record.slurm.get(KEY) if isinstance(record.slurm, dict) else None)


def mark(record: LaunchRecord, why: str) -> bool:
    """Note that Slurm did not answer about this live job; True when the record changed."""
    if not record.live or not isinstance(record.slurm, dict):
        return False
    renewed = outage_note.renewed(record.slurm.get(KEY), why)
    if renewed is None:
        return False
    record.slurm[KEY] = renewed
    return True


def clear(record: LaunchRecord) -> None:
    """Slurm answered: the note goes."""
    if isinstance(record.slurm, dict):
        record.slurm.pop(KEY, None)


def describe(record: LaunchRecord) -> str:
    """` · Slurm not answering since 14:02:11: why`, or nothing."""
    found = note(record) if record.live else None
    if found is None:
        return ""
    return " · " + outage_note.line("Slurm", found)
