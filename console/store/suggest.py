"""Turning saved records into task suggestions, keyed by the records' one id.

A crash is offered as `crash:<crash id>` whichever path sees it first (the
runtime that recorded it, a scan of crashes/ by a console or by the CLI), so
one crash yields one suggestion; the board refuses a key it has seen.

Whether a crash record is a crash to investigate, and of which class, is the
launch's owner's word (`servers.launch_state.read`), not the crash file's:
a launch the owner reads stopped (a stop another process asked for) is no
task, and a class the owner took in later (an engine death) names it. Only a
crash with no launch record to read (a log triaged by hand) is offered as its
file says.
"""
from __future__ import annotations

from typing import Any

from profiles.task_suggestion import (Suggestion, crash_suggestion, efficiency_suggestion, promise_suggestion,
                                     sweep_suggestions)

from .crashes import CrashRecord, read_crashes
from .launches import LaunchRecord, load_all
from .runs import read_runs
from .task_board import TaskBoard

_UNREAD = object()   # the launch was not looked up: read it from the store


def crash_offer(crash: CrashRecord, profile: str,
                launch: LaunchRecord | None | object = _UNREAD) -> Suggestion | None:
    """The suggestion for a crash as its launch's owner reads it: none when the owner reads the launch
    as no crash, the owner's class when it has one. `launch`: the crash's launch record when the
    caller has read it (None: there is none); else it is read from `profile`'s store."""
    doc = _as_owner_reads(crash.to_doc(), profile, launch)
    return crash_suggestion(doc, crash.id) if doc is not None else None


def _as_owner_reads(doc: dict[str, Any], profile: str, launch: LaunchRecord | None | object = _UNREAD,
                    ) -> dict[str, Any] | None:
    """A crash file's doc as the launch's owner reads it (`launch_state.read`): None when the owner
    reads no crash, else with the owner's class and config; unchanged when it names no launch."""
    from ..servers import launch_state

    record: LaunchRecord | None = None
    if isinstance(launch, LaunchRecord):
        record = launch
    elif launch is _UNREAD and isinstance(doc.get("launch"), str) and doc["launch"]:
        record = next((r for r in load_all(profile) if r.id == doc["launch"]), None)
    if record is None:
        return doc
    reading = launch_state.read(record)
    if not reading.crashed:
        return None
    return doc | {"class": reading.crash_class or doc.get("class"), "config": record.config}


def offer_crash(profile: str, crash: CrashRecord) -> Suggestion | None:
    """Offer one crash (the board keeps it once); None when it was already offered, or when the
    launch's owner reads it as no crash."""
    board = TaskBoard.for_profile(profile)
    s = crash_offer(crash, profile)
    return s if s is not None and not board.readonly and board.suggest(s) else None


def offer_new(profile: str) -> list[Suggestion]:
    """Offer every crash and failed or partial sweep level not offered before; never adds a task.

    Unreadable files are skipped here: the store names them where records are shown.
    """
    board = TaskBoard.for_profile(profile)
    if board.readonly:
        return []
    offered: list[Suggestion] = []
    by_id = {r.id: r for r in load_all(profile)}
    for crash in sorted(read_crashes(profile).records, key=lambda c: c.id):
        s = crash_offer(crash, profile, by_id.get(crash.launch) if crash.launch else None)
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
    """A crash record (dict as stored in crashes/) becomes a suggested task, once, as its launch's
    owner reads it."""
    doc = _as_owner_reads(crash, _profile_name(profile)) if isinstance(crash, dict) else None
    s = crash_suggestion(doc, record) if doc is not None else None
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
