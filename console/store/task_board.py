"""One profile's task board as a console (or a CLI call) sees it: every edit saves at once.

A save takes the board's lock, re-reads tasks.toml, merges this console's
edit with whatever other consoles wrote since it last read
(profiles.tasks.merge_states) and replaces the file atomically
(console.store.tasks). A file that does not parse is never written: the board
reports it with its line and turns read-only until the operator fixes it.
"""
from __future__ import annotations

import threading
from dataclasses import replace
from pathlib import Path
from typing import Any, Callable, TypeVar

from profiles.atomic import StateFileError
from profiles.task_model import PRIORITIES, STATUSES, Task, now_iso
from profiles.task_suggestion import Suggestion
from profiles.tasks import (STATUS_CYCLE, BoardReadOnly, BoardState, check_choice, counts_summary, merge_states,
                            sort_tasks, task_text)

from .tasks import FileWatch, board_lock, read_board, tasks_file, write_board

T = TypeVar("T")  # what an edit returns


class TaskBoard:
    """One profile's board as this console sees it; every edit saves and merges."""

    def __init__(self, path: Path, readonly: bool = False):
        self.path = Path(path)
        self.console_readonly = readonly
        self.error: StateFileError | None = None
        self.conflicts: list[str] = []      # the last save's merge notes, for the operator
        self.foreign_merges = 0             # saves that folded in another console's edits
        self._state = BoardState()
        self._watch = FileWatch(self.path)
        # A console may poll from a timer while an edit runs in a worker thread.
        self._mutex = threading.RLock()
        self.reload()

    @classmethod
    def for_profile(cls, name: str, readonly: bool = False) -> "TaskBoard":
        return cls(tasks_file(name), readonly=readonly)

    # ---- reading -------------------------------------------------------

    @property
    def readonly(self) -> bool:
        return self.console_readonly or self.error is not None

    def reload(self) -> bool:
        """Re-read the file. False (and read-only) when it does not parse."""
        with self._mutex:
            self._watch.mark()
            try:
                self._state = read_board(self.path)
            except StateFileError as exc:
                self.error = exc
                return False
            self.error = None
            return True

    def poll(self) -> bool:
        """Reload if another console changed the file; True when something changed."""
        with self._mutex:
            if not self._watch.changed():
                return False
            self.reload()
            return True

    @property
    def tasks(self) -> list[Task]:
        return sort_tasks(list(self._state.tasks.values()))

    def get(self, tid: int) -> Task:
        try:
            return self._state.tasks[tid]
        except KeyError:
            raise KeyError(f"no task {tid}") from None

    @property
    def suggestions(self) -> list[Suggestion]:
        return list(self._state.suggestions.values())

    @property
    def dismissed(self) -> frozenset[str]:
        return self._state.dismissed

    @property
    def threshold_pct(self) -> float | None:
        return self._state.threshold_pct

    def summary(self) -> str:
        return counts_summary(self.tasks)

    # ---- saving --------------------------------------------------------

    def _commit(self, mutate: Callable[[BoardState], T]) -> T:
        if self.console_readonly:
            raise BoardReadOnly("read-only console: edits are off")
        if self.error is not None:
            raise BoardReadOnly(f"board is read-only until the file is fixed: {self.error}")
        with self._mutex, board_lock(self.path):
            try:
                disk = read_board(self.path)
            except StateFileError as exc:
                self.error = exc
                raise BoardReadOnly(f"board is read-only until the file is fixed: {exc}") from None
            if disk.tasks != self._state.tasks or disk.suggestions != self._state.suggestions:
                self.foreign_merges += 1
            mine = self._state.copy()
            mine.next_id = max(mine.next_id, disk.next_id)
            # New ids must be free on disk too, where another console may have added tasks.
            mine.next_id = max(mine.next_id, max(disk.tasks, default=0) + 1)
            outcome = mutate(mine)
            merged, conflicts = merge_states(self._state, mine, disk)
            write_board(self.path, merged)
            self._watch.mark()
            self._state = merged
            self.conflicts = conflicts
        return outcome

    # ---- edits ---------------------------------------------------------

    def add(self, text: str, priority: str = "medium", status: str = "pending",
            notes: str | None = None, crash: str | None = None, run: str | None = None,
            config: str | None = None, source: str | None = None) -> Task:
        text = task_text(text)
        check_choice("priority", priority, PRIORITIES)
        check_choice("status", status, STATUSES)

        def mutate(state: BoardState) -> Task:
            stamp = now_iso()
            order = max((t.order for t in state.tasks.values()), default=0.0) + 1.0
            task = Task(id=state.fresh_id(), text=text, status=status, priority=priority, order=order,
                        created=stamp, updated=stamp, notes=notes or None, crash=crash, run=run,
                        config=config, source=source)
            state.tasks[task.id] = task
            return task

        return self._commit(mutate)

    def edit(self, tid: int, **changes: Any) -> Task:
        """Change any of text, status, priority, order, notes, crash, run, config."""
        allowed = {"text", "status", "priority", "order", "notes", "crash", "run", "config"}
        bad = set(changes) - allowed
        if bad:
            raise ValueError(f"cannot edit {sorted(bad)[0]!r}")
        if "text" in changes:
            changes["text"] = task_text(changes["text"])
        if "status" in changes:
            check_choice("status", changes["status"], STATUSES)
        if "priority" in changes:
            check_choice("priority", changes["priority"], PRIORITIES)
        if "notes" in changes and not changes["notes"]:
            changes["notes"] = None
        self.get(tid)

        def mutate(state: BoardState) -> Task:
            current = state.tasks.get(tid)
            if current is None:
                raise KeyError(f"no task {tid}")
            task = replace(current, **changes, updated=now_iso())
            state.tasks[tid] = task
            return task

        return self._commit(mutate)

    def cycle_status(self, tid: int) -> Task:
        """pending → in_progress → completed → cancelled → pending."""
        current = self.get(tid).status
        nxt = STATUS_CYCLE[(STATUS_CYCLE.index(current) + 1) % len(STATUS_CYCLE)]
        return self.edit(tid, status=nxt)

    def shift_priority(self, tid: int, step: int) -> Task:
        """step +1 raises (low → medium → high), -1 lowers; stops at the ends."""
        index = PRIORITIES.index(self.get(tid).priority) - step
        index = min(max(index, 0), len(PRIORITIES) - 1)
        return self.edit(tid, priority=PRIORITIES[index])

    def move(self, tid: int, step: int) -> bool:
        """Swap places with the neighbour above (-1) or below (+1) of the same group and priority."""
        task = self.get(tid)
        if not task.is_open:
            return False
        peers = [t for t in self.tasks if t.status == task.status and t.priority == task.priority]
        index = next(i for i, t in enumerate(peers) if t.id == tid)
        other_index = index + step
        if not 0 <= other_index < len(peers):
            return False
        other = peers[other_index]

        def mutate(state: BoardState) -> None:
            stamp = now_iso()
            a, b = state.tasks[tid], state.tasks[other.id]
            a_order, b_order = b.order, a.order
            if a_order == b_order:
                a_order = b.order + (0.5 if step > 0 else -0.5)
            state.tasks[tid] = replace(a, order=a_order, updated=stamp)
            state.tasks[other.id] = replace(b, order=b_order, updated=stamp)

        self._commit(mutate)
        return True

    def remove(self, tid: int) -> Task:
        """Delete a task; returns it so that `restore` can undo."""
        removed = self.get(tid)

        def mutate(state: BoardState) -> Task:
            return state.tasks.pop(tid, removed)

        return self._commit(mutate)

    def restore(self, task: Task) -> Task:
        """Undo a delete: the task comes back with its id (ids are never reused)."""

        def mutate(state: BoardState) -> Task:
            back = replace(task, updated=now_iso())
            state.tasks[back.id] = back
            return back

        return self._commit(mutate)

    # ---- suggestions ---------------------------------------------------

    def suggest(self, suggestion: Suggestion | None) -> bool:
        """Offer a suggestion; False when it was already offered, accepted or dismissed."""
        if suggestion is None or self.readonly:
            return False
        key = suggestion.key
        if (key in self._state.suggestions or key in self._state.dismissed
                or any(t.source == key for t in self._state.tasks.values())):
            return False
        offered = replace(suggestion, created=suggestion.created or now_iso())

        def mutate(state: BoardState) -> None:
            state.suggestions[key] = offered

        self._commit(mutate)
        return key in self._state.suggestions

    def accept(self, key: str) -> Task:
        s = self._state.suggestions.get(key)
        if s is None:
            raise KeyError(f"no suggestion {key!r}")

        def mutate(state: BoardState) -> Task:
            stamp = now_iso()
            order = max((t.order for t in state.tasks.values()), default=0.0) + 1.0
            task = Task(id=state.fresh_id(), text=s.text, priority=s.priority, order=order,
                        created=stamp, updated=stamp, crash=s.crash, run=s.run, config=s.config,
                        source=s.key)
            state.tasks[task.id] = task
            state.suggestions.pop(key, None)
            return task

        return self._commit(mutate)

    def dismiss(self, key: str, waiting_only: bool = False) -> None:
        """Turn a suggestion down; the same event never suggests it again. With `waiting_only`
        (what an operator dismisses: the console's n, `gpudeck tasks dismiss`) only a suggestion
        the board offers now: KeyError for any other key."""
        if waiting_only and key not in self._state.suggestions:
            raise KeyError(f"no suggestion {key!r} waiting")

        def mutate(state: BoardState) -> None:
            state.suggestions.pop(key, None)
            state.dismissed = state.dismissed | {key}

        self._commit(mutate)

    def set_threshold(self, pct: float | None) -> None:
        """The efficiency (percent) below which a measurement suggests a task; None turns it off.
        ValueError outside (0, 100]."""
        if pct is not None and not 0 < pct <= 100:
            raise ValueError(f"bad threshold {pct:g}: between 0 and 100")

        def mutate(state: BoardState) -> None:
            state.threshold_pct = pct

        self._commit(mutate)

    # ---- export --------------------------------------------------------

    def to_json(self) -> dict[str, Any]:
        return {
            "file": str(self.path),
            "readonly": self.readonly,
            "error": str(self.error) if self.error else None,
            "error_line": self.error.line if self.error else None,
            "summary": self.summary(),
            "efficiency_threshold_pct": self.threshold_pct,
            "tasks": [t.to_json() for t in self.tasks],
            "suggestions": [s.to_json() for s in self.suggestions],
            "dismissed": sorted(self.dismissed),
        }
