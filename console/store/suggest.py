"""Turning saved records into task suggestions, keyed by the records' one id.

A crash is offered as `crash:<crash id>` whichever path sees it first (the
runtime that recorded it, a scan of crashes/ by a console or by the CLI), so
one crash yields one suggestion; the board refuses a key it has seen.
"""
from __future__ import annotations

from profiles.task_suggestion import Suggestion, crash_suggestion, sweep_suggestions
from profiles.tasks import TaskBoard

from .crashes import CrashRecord, read_crashes
from .runs import read_runs


def crash_offer(crash: CrashRecord) -> Suggestion | None:
    return crash_suggestion(crash.to_doc(), crash.id)


def offer_crash(profile: str, crash: CrashRecord) -> Suggestion | None:
    """Offer one crash (the board keeps it once); None when it was already offered."""
    board = TaskBoard.for_profile(profile)
    s = crash_offer(crash)
    return s if s is not None and not board.readonly and board.suggest(s) else None


def offer_new(profile: str) -> list[Suggestion]:
    """Offer every crash and failed or partial sweep level not offered before; never adds a task.

    Unreadable files are skipped here: the store names them where records are shown.
    """
    board = TaskBoard.for_profile(profile)
    if board.readonly:
        return []
    offered: list[Suggestion] = []
    for crash in sorted(read_crashes(profile).records, key=lambda c: c.id):
        s = crash_offer(crash)
        if s is not None and board.suggest(s):
            offered.append(s)
    for run in sorted(read_runs(profile).records, key=lambda r: r.id):
        for s in sweep_suggestions(run.raw, run.id):
            if board.suggest(s):
                offered.append(s)
    return offered



def offer_new_on(board: TaskBoard, profile: str) -> list[Suggestion]:
    """`offer_new`, then `board` re-read so it shows what was offered (the Tasks tab on opening a
    host, `gpudeck tasks suggestions --scan`). A read-only board offers nothing."""
    if board.readonly:
        return []
    offered = offer_new(profile)
    if offered:
        board.reload()
    return offered