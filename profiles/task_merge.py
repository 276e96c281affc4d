"""Three-way merge of task boards, so two consoles can edit one board.

Each console remembers the board as it last read it (the base). When it
saves, it re-reads the file and merges field by field: a field only one side
changed takes that side's value; a field both sides changed to different
values is a conflict. For the wording of a task (text, notes) a conflict
keeps both versions as two tasks, because a lost sentence cannot be rebuilt;
for the rest (status, priority, order, links) the later edit wins and the
operator is told.
"""
from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any, Callable

from .task_model import Task

KEEP_BOTH_FIELDS = ("text", "notes")
NEWER_WINS_FIELDS = ("status", "priority", "order", "crash", "run", "config", "source")


@dataclass
class MergeResult:
    tasks: dict[int, Task]
    conflicts: list[str] = field(default_factory=list)


def merge_boards(base: dict[int, Task], mine: dict[int, Task], theirs: dict[int, Task],
                 new_id: Callable[[], int]) -> MergeResult:
    """Combine my edits (mine vs base) with what is on disk now (theirs vs base)."""
    out: dict[int, Task] = {}
    notes: list[str] = []
    for tid in sorted(set(base) | set(mine) | set(theirs)):
        b, m, t = base.get(tid), mine.get(tid), theirs.get(tid)
        if m == b:
            if t is not None:
                out[tid] = t
            continue
        if t == b:
            if m is not None:
                out[tid] = m
            continue
        if m == t:
            if m is not None:
                out[tid] = m
            continue
        # Both sides touched this id since the base.
        if m is None or t is None:
            kept = m if m is not None else t
            if kept is not None:   # both gone was settled above (m == t)
                out[tid] = kept
            notes.append(f"task {tid} was deleted in one console and edited in another: "
                         f"kept the edited one")
            continue
        if b is None:
            # Both created a task under one id (should not happen: ids are taken
            # under the lock); keep both.
            out[tid] = t
            copy = replace(m, id=new_id(), conflict_of=tid)
            out[copy.id] = copy
            notes.append(f"two consoles created task {tid}: kept both ({tid} and {copy.id})")
            continue
        merged, note, loser = _merge_task(b, m, t)
        out[tid] = merged
        if loser is not None:
            copy = replace(loser, id=new_id(), conflict_of=tid)
            out[copy.id] = copy
            notes.append(f"task {tid} was reworded in two consoles: kept both ({tid} and {copy.id})")
        elif note:
            notes.append(note)
    return MergeResult(out, notes)


def _merge_task(b: Task, m: Task, t: Task) -> tuple[Task, str | None, Task | None]:
    """Field-wise merge; returns the task, a note for a settled clash, and a losing version to keep."""
    newer, older = (m, t) if m.updated >= t.updated else (t, m)
    values: dict[str, Any] = {}
    clashed: list[str] = []
    wording_clash = False
    for name in (*KEEP_BOTH_FIELDS, *NEWER_WINS_FIELDS):
        bv, mv, tv = getattr(b, name), getattr(m, name), getattr(t, name)
        if mv == bv:
            values[name] = tv
        elif tv == bv or mv == tv:
            values[name] = mv
        else:
            values[name] = getattr(newer, name)
            if name in KEEP_BOTH_FIELDS:
                wording_clash = True
            elif name != "order":
                clashed.append(f"{name} {getattr(older, name)} → {getattr(newer, name)}")
    merged = replace(newer, **values, updated=max(m.updated, t.updated))
    if wording_clash:
        return merged, None, older
    note = None
    if clashed:
        note = f"task {b.id} changed in two consoles: kept the later edit ({', '.join(clashed)})"
    return merged, note, None
