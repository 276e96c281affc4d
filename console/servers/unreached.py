"""A live launch whose host did not answer: its state is unknown now, never taken for ended.

The process-side twin of `console.slurm.unanswered`. When the look at a live
launch's process group fails because the host cannot be reached (an SSH
outage, at console start or later), the record keeps its last state but
carries an `unreached` note (`outage_note.OutageNote`: since when, why), so every view shows it
as `unknown` (`LaunchRecord.shown_state`) and says why; the next look that
reaches the host removes it, and the wrapper's exit file then says how the
launch ended if it ended meanwhile. The record is saved only when the note
appears or its reason changes, not on every failed look.
"""
from __future__ import annotations

from .. import outage_note
from ..outage_note import OutageNote
from ..store import launches
from ..store.launches import LaunchRecord


def note(record: LaunchRecord) -> OutageNote | None:
    """The record's note, its fields checked (the file is read as untrusted); None when it has none."""
    return outage_note.checked(record.unreached)


def mark(record: LaunchRecord, why: str) -> bool:
    """Note that the host did not answer about this live launch; True when the record changed."""
    if not record.live or record.slurm is not None:  # a Slurm job's outage is console.slurm.unanswered's
        return False
    renewed = outage_note.renewed(record.unreached, why)
    if renewed is None:
        return False
    record.unreached = renewed
    return True


def clear(record: LaunchRecord) -> bool:
    """The host answered: the note goes. True when there was one (the record must be saved)."""
    had = record.unreached is not None
    record.unreached = None
    return had


def note_outage(profile: str, record: LaunchRecord, exc: Exception) -> bool:
    """Mark the record and save it when the note is new; a stop another process asked for
    meanwhile is kept, not overwritten by this copy. True when the record changed."""
    if not mark(record, str(exc) or type(exc).__name__):
        return False
    from . import launch_state

    stopped = launches.stop_asked_elsewhere(profile, record)
    if stopped is not None:
        launch_state.apply(record, launch_state.StopSeenElsewhere(stopped))
    launch_state.save(profile, record)
    return True


def why_unknown(record: LaunchRecord) -> str:
    """One line saying why a launch shows `unknown` (its host, or Slurm, not answering), or nothing."""
    if not record.live:
        return ""
    found = note(record)
    if found is not None:
        return outage_note.line("host", found)
    if record.slurm is not None:
        from ..slurm.unanswered import describe

        return describe(record).removeprefix(" · ")
    return ""
