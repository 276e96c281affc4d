"""Turning saved records into task suggestions, keyed by the records' one id.

A crash is offered as `crash:<crash id>` whichever path sees it first (the
runtime that recorded it, a scan of crashes/ by a console or by the CLI), so
one crash yields one suggestion; the board refuses a key it has seen.
"""
from __future__ import annotations

from typing import Any

from profiles.task_suggestion import (Suggestion, crash_suggestion, efficiency_suggestion, promise_suggestion,
                                     sweep_suggestions)

from .crashes import CrashRecord, read_crashes
from .runs import read_runs
from .task_board import TaskBoard


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


# ---- what the other panes call: one event, one suggestion, offered once

def _profile_name(profile: Any) -> str:
    return profile if isinstance(profile, str) else profile.name


def suggest_from_crash(profile: Any, crash: dict[str, Any], record: str | None = None) -> Suggestion | None:
    """A crash record (dict as stored in crashes/) becomes a suggested task, once."""
    s = crash_suggestion(crash, record)
    board = TaskBoard.for_profile(_profile_name(profile))
    return s if s is not None and board.suggest(s) else None


def suggest_from_run(profile: Any, run: dict[str, Any], run_name: str) -> list[Suggestion]:
    """Each failed or partial level of a stored run becomes a suggested rerun, once."""
    board = TaskBoard.for_profile(_profile_name(profile))
    return [s for s in sweep_suggestions(run, run_name) if board.suggest(s)]


def suggest_from_efficiency(profile: Any, label: str, efficiency_pct: float | None,
                            run: str | None = None, config: str | None = None,
                            key: str | None = None) -> Suggestion | None:
    """An efficiency below the board's threshold becomes a suggested task, once (per `key`)."""
    board = TaskBoard.for_profile(_profile_name(profile))
    s = efficiency_suggestion(label, efficiency_pct, board.threshold_pct, run=run, config=config, key=key)
    return s if s is not None and board.suggest(s) else None


def suggest_from_promise(profile: Any, config: str, warning: str) -> Suggestion | None:
    """A launch config whose name contradicts its flags becomes a suggested check, once."""
    board = TaskBoard.for_profile(_profile_name(profile))
    s = promise_suggestion(config, warning)
    return s if s is not None and board.suggest(s) else None
