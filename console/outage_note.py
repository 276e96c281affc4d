"""The note a live launch carries while what answers for it does not (its host, or Slurm).

Two places keep one: `console.servers.unreached` (the host of an SSH or local
launch) and `console.slurm.unanswered` (Slurm's controller). The note is an
`OutageNote` (`{"since": when, "error": why}` on disk), read back from a record
on disk, so it is checked field by field (a bad field reads unknown, never a
crash); and it is renewed only when its reason changes, so the record is not
saved again on every failed look.
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from .fmt import clock
from .safe_text import clean_line

MAX_ERROR = 300


@dataclass(frozen=True)
class OutageNote:
    """Since when (None: unknown) and why the host or Slurm has not answered about a live launch."""

    since: float | None
    error: str

    @classmethod
    def from_json(cls, found: object) -> OutageNote | None:
        """The note with its fields checked (an untrusted file); None when there is none (not a table)."""
        if isinstance(found, OutageNote):
            return found
        if not isinstance(found, dict):
            return None
        since = found.get("since")
        since = float(since) if isinstance(since, (int, float)) and not isinstance(since, bool) \
            and 0 < since < 1e11 else None
        error = found.get("error")
        return cls(since, clean_line(error)[:MAX_ERROR] if isinstance(error, str) else "")

    def to_json(self) -> dict[str, Any]:
        return {"since": self.since, "error": self.error}


def checked(found: object) -> OutageNote | None:
    """The note with its fields checked (an untrusted file); None when there is none."""
    return OutageNote.from_json(found)


def renewed(before: object, why: str) -> OutageNote | None:
    """The note to keep after another failed look for `why`; None when the one there already says it
    (its `since` is kept across a change of reason: the outage is the same one)."""
    why = clean_line(why)[:MAX_ERROR]
    old = checked(before)
    if old is not None and old.error == why:
        return None
    return OutageNote(old.since if old is not None and old.since else time.time(), why)


def line(what: str, note: OutageNote) -> str:
    """`<what> not answering since 14:02:11: why`."""
    return f"{what} not answering since {clock(note.since)}: {note.error or 'no reason given'}"
