"""A live job Slurm did not answer about: its state is unknown now, never taken for ended.

When `scontrol` does not answer (slurmctld down, the login node unreachable,
the client missing), the record keeps its last state but carries
`slurm["unanswered"] = {"since": when, "error": why}`, so every view shows
it as `unknown` (`LaunchRecord.shown_state`) and says why; the next answer
removes it. The record is saved only when the note appears or its reason
changes, not on every failed poll.
"""
from __future__ import annotations

import time

from ..fmt import clock
from ..safe_text import clean_line
from ..store.launches import LaunchRecord

KEY = "unanswered"
MAX_ERROR = 300


def note(record: LaunchRecord) -> dict | None:
    """The record's note, its fields checked (the file is read as untrusted); None when it has none."""
    s = record.slurm if isinstance(record.slurm, dict) else {}
    found = s.get(KEY)
    if not isinstance(found, dict):
        return None
    since = found.get("since")
    since = since if isinstance(since, (int, float)) and not isinstance(since, bool) and 0 < since < 1e11 else None
    error = found.get("error")
    return {"since": since, "error": clean_line(error)[:MAX_ERROR] if isinstance(error, str) else ""}


def mark(record: LaunchRecord, why: str) -> bool:
    """Note that Slurm did not answer about this live job; True when the record changed."""
    if not record.live or not isinstance(record.slurm, dict):
        return False
    why = clean_line(why)[:MAX_ERROR]
    before = note(record)
    if before is not None and before["error"] == why:
        return False
    since = before["since"] if before is not None and before["since"] else time.time()
    record.slurm[KEY] = {"since": since, "error": why}
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
    return f" · Slurm not answering since {clock(found['since'])}: {found['error'] or 'no reason given'}"
