"""A live job Slurm did not answer about: its state is unknown now, never taken for ended.

When `scontrol` does not answer (slurmctld down, the login node unreachable,
the client missing), the record keeps its last state but its Slurm part
carries an `unanswered` note (`outage_note.OutageNote`: since when, why), so
every view shows it as `unknown` (`LaunchRecord.shown_state`) and says why;
the next answer removes it. The record is saved only when the note appears or
its reason changes, not on every failed poll.
"""
from __future__ import annotations

from dataclasses import replace

from .. import outage_note
from ..outage_note import OutageNote
from ..store.launches import LaunchRecord


def note(record: LaunchRecord) -> OutageNote | None:
    """The record's note; None when it has none."""
    return record.slurm.unanswered if record.slurm is not None else None


def mark(record: LaunchRecord, why: str) -> bool:
    """Note that Slurm did not answer about this live job; True when the record changed."""
    if not record.live or record.slurm is None:
        return False
    renewed = outage_note.renewed(record.slurm.unanswered, why)
    if renewed is None:
        return False
    record.slurm = replace(record.slurm, unanswered=renewed)
    return True


def clear(record: LaunchRecord) -> None:
    """Slurm answered: the note goes."""
    if record.slurm is not None and record.slurm.unanswered is not None:
        record.slurm = replace(record.slurm, unanswered=None)


def describe(record: LaunchRecord) -> str:
    """` · Slurm not answering since 14:02:11: why`, or nothing."""
    found = note(record) if record.live else None
    if found is None:
        return ""
    return " · " + outage_note.line("Slurm", found)
