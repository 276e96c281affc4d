"""The task board of one profile, kept in `<profile data dir>/tasks.toml`.

Every edit is saved at once. A save takes an flock on `tasks.toml.lock`,
re-reads the file, merges this console's edit with whatever other consoles
wrote since it last read (see task_merge.py) and replaces the file
atomically. A file that does not parse is never written: the board reports
it with its line and turns read-only until the operator fixes it.

File layout:

    version = 1
    next_id = 8                      # ids are never reused
    efficiency_threshold_pct = 10.0  # below this, an efficiency suggests a task
    dismissed = ["crash:...", ...]   # suggestions the operator turned down
    [[tasks]]        id, text, status, priority, order, created, updated, notes,
                     crash, run, config, source, conflict_of
    [[suggestions]]  key, text, kind, priority, crash, run, config, created
"""
from __future__ import annotations

import fcntl
import os
import re
import threading
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Callable, Iterator

from . import paths
from .atomic import StateFileError, read_toml, write_toml
from .task_merge import merge_boards
from .task_model import (PRIORITIES, STATUSES, Task, TaskFormatError, now_iso,
                         task_from_dict, task_to_dict)
from .task_suggestion import (Suggestion, crash_suggestion, efficiency_suggestion, promise_suggestion,
                              suggestion_from_dict, suggestion_to_dict, sweep_suggestions)

__all__ = ["TaskBoard", "BoardReadOnly", "Task", "Suggestion", "FileWatch", "STATUSES", "PRIORITIES",
           "tasks_file", "suggest_from_crash", "suggest_from_run", "suggest_from_efficiency",
           "sort_tasks", "counts_summary"]

FILE_VERSION = 1
DEFAULT_THRESHOLD_PCT = 10.0
STATUS_CYCLE = ("pending", "in_progress", "completed", "cancelled")
_GROUP_RANK = {"in_progress": 0, "pending": 1, "completed": 2, "cancelled": 3}
_PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}


class BoardReadOnly(Exception):
    """The board cannot be edited: its file is broken, or the console is read-only."""


def tasks_file(profile_name: str) -> Path:
    return paths.profile_data_dir(profile_name) / "tasks.toml"


@dataclass
class BoardState:
    """Everything tasks.toml holds, parsed."""

    tasks: dict[int, Task] = field(default_factory=dict)
    next_id: int = 1
    suggestions: dict[str, Suggestion] = field(default_factory=dict)
    dismissed: frozenset[str] = frozenset()
    threshold_pct: float | None = DEFAULT_THRESHOLD_PCT

    def copy(self) -> "BoardState":
        return BoardState(dict(self.tasks), self.next_id, dict(self.suggestions), self.dismissed,
                          self.threshold_pct)

    def fresh_id(self) -> int:
        self.next_id = max(self.next_id, max(self.tasks, default=0) + 1)
        tid = self.next_id
        self.next_id += 1
        return tid

    def to_toml(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"version": FILE_VERSION, "next_id": self.next_id}
        if self.threshold_pct is not None:
            doc["efficiency_threshold_pct"] = self.threshold_pct
        else:
            doc["efficiency_threshold_pct"] = "off"
        doc["dismissed"] = sorted(self.dismissed)
        doc["tasks"] = [task_to_dict(t) for t in sorted(self.tasks.values(), key=lambda t: t.id)]
        doc["suggestions"] = [suggestion_to_dict(s) for s in self.suggestions.values()]
        return doc


def _line_of_table(text: str, table: str, index: int) -> int | None:
    """Line number of the index-th `[[table]]` header (for errors found after parsing)."""
    pattern = re.compile(rf"^[ \t]*\[\[[ \t]*{re.escape(table)}[ \t]*\]\]", re.M)
    for i, match in enumerate(pattern.finditer(text)):
        if i == index:
            return text.count("\n", 0, match.start()) + 1
    return None


def parse_state(path: Path) -> BoardState:
    """Read tasks.toml; a missing file is an empty board, a broken one raises StateFileError."""
    if not path.exists():
        return BoardState()
    try:
        doc = read_toml(path)
    except StateFileError as exc:
        if exc.line is None and "end of document" in exc.reason:
            # tomllib names no line for a file cut short: the last line is the one.
            lines = path.read_text(encoding="utf-8", errors="replace").count("\n")
            raise StateFileError(path, exc.reason, max(lines, 1)) from None
        raise
    text = path.read_text(encoding="utf-8")

    def fail(reason: str, line: int | None = None) -> StateFileError:
        return StateFileError(path, reason, line)

    version = doc.get("version", FILE_VERSION)
    if version != FILE_VERSION:
        raise fail(f"unknown tasks file version {version!r} (this gpudeck reads {FILE_VERSION})")
    raw_tasks = doc.get("tasks", [])
    if not isinstance(raw_tasks, list):
        raise fail("'tasks' must be an array of tables [[tasks]]")
    tasks: dict[int, Task] = {}
    for index, raw in enumerate(raw_tasks):
        try:
            task = task_from_dict(raw)
        except TaskFormatError as exc:
            raise fail(str(exc), _line_of_table(text, "tasks", index)) from None
        if task.id in tasks:
            raise fail(f"task id {task.id} appears twice", _line_of_table(text, "tasks", index))
        tasks[task.id] = task
    raw_sugg = doc.get("suggestions", [])
    if not isinstance(raw_sugg, list):
        raise fail("'suggestions' must be an array of tables [[suggestions]]")
    suggestions: dict[str, Suggestion] = {}
    for index, raw in enumerate(raw_sugg):
        try:
            s = suggestion_from_dict(raw)
        except ValueError as exc:
            raise fail(str(exc), _line_of_table(text, "suggestions", index)) from None
        suggestions[s.key] = s
    dismissed = doc.get("dismissed", [])
    if not isinstance(dismissed, list) or not all(isinstance(k, str) for k in dismissed):
        raise fail("'dismissed' must be a list of strings")
    next_id = doc.get("next_id", 1)
    if not isinstance(next_id, int) or isinstance(next_id, bool) or next_id < 1:
        raise fail("'next_id' must be a positive integer")
    threshold = doc.get("efficiency_threshold_pct", DEFAULT_THRESHOLD_PCT)
    if threshold == "off":
        threshold = None
    elif isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise fail("'efficiency_threshold_pct' must be a number or \"off\"")
    unknown = set(doc) - {"version", "next_id", "tasks", "suggestions", "dismissed",
                          "efficiency_threshold_pct"}
    if unknown:
        raise fail(f"unknown key {sorted(unknown)[0]!r}")
    state = BoardState(tasks, max(next_id, max(tasks, default=0) + 1), suggestions,
                       frozenset(dismissed), None if threshold is None else float(threshold))
    return state


def merge_states(base: BoardState, mine: BoardState, theirs: BoardState) -> tuple[BoardState, list[str]]:
    """Tasks merge per task; suggestions and dismissals merge as sets."""
    counter = BoardState(next_id=max(mine.next_id, theirs.next_id))
    counter.tasks = {**theirs.tasks, **mine.tasks}
    result = merge_boards(base.tasks, mine.tasks, theirs.tasks, counter.fresh_id)
    dismissed = mine.dismissed | theirs.dismissed
    used = {t.source for t in result.tasks.values() if t.source}
    suggestions: dict[str, Suggestion] = {}
    for key, s in {**theirs.suggestions, **mine.suggestions}.items():
        removed_by_me = key in base.suggestions and key not in mine.suggestions
        removed_by_them = key in base.suggestions and key not in theirs.suggestions
        if removed_by_me or removed_by_them or key in dismissed or key in used:
            continue
        suggestions[key] = s
    threshold = mine.threshold_pct if mine.threshold_pct != base.threshold_pct else theirs.threshold_pct
    merged = BoardState(result.tasks, max(counter.next_id, mine.next_id, theirs.next_id),
                        suggestions, dismissed, threshold)
    return merged, result.conflicts


class FileWatch:
    """Notices that a file changed on disk (new inode, mtime or size): cheap enough to poll twice a second."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._seen = self._signature()

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def changed(self) -> bool:
        """True once per change since the last call (or the last `mark`)."""
        now = self._signature()
        if now != self._seen:
            self._seen = now
            return True
        return False

    def mark(self) -> None:
        """Our own write: do not report it as a change."""
        self._seen = self._signature()


def sort_tasks(tasks: list[Task]) -> list[Task]:
    """In progress, then pending, each by priority and order; then completed, then cancelled,
    most recently finished first."""
    open_ = sorted((t for t in tasks if t.is_open),
                   key=lambda t: (_GROUP_RANK[t.status], _PRIORITY_RANK[t.priority], t.order, t.id))
    finished = sorted((t for t in tasks if not t.is_open), key=lambda t: (t.updated, t.id), reverse=True)
    finished.sort(key=lambda t: _GROUP_RANK[t.status])  # stable: keeps newest first within a group
    return open_ + finished


def counts_summary(tasks: list[Task]) -> str:
    """The tab title's counts: '1▶ 3●' (in progress, pending); '✔' when everything is done."""
    running = sum(t.status == "in_progress" for t in tasks)
    pending = sum(t.status == "pending" for t in tasks)
    parts = []
    if running:
        parts.append(f"{running}▶")
    if pending:
        parts.append(f"{pending}●")
    if not parts:
        return "✔" if tasks else "empty"
    return " ".join(parts)


class TaskBoard:
    """One profile's board as this console sees it; every edit saves and merges."""

    def __init__(self, path: Path, readonly: bool = False):
        self.path = Path(path)
        self.lock_path = self.path.with_name(self.path.name + ".lock")
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
                self._state = parse_state(self.path)
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

    @contextmanager
    def _locked(self) -> Iterator[None]:
        self.lock_path.parent.mkdir(parents=True, exist_ok=True)
        fd = os.open(self.lock_path, os.O_RDWR | os.O_CREAT, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)

    def _commit(self, mutate: Callable[[BoardState], Any]) -> Any:
        if self.console_readonly:
            raise BoardReadOnly("read-only console: edits are off")
        if self.error is not None:
            raise BoardReadOnly(f"board is read-only until the file is fixed: {self.error}")
        with self._mutex, self._locked():
            try:
                disk = parse_state(self.path)
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
            write_toml(self.path, merged.to_toml())
            self._watch.mark()
            self._state = merged
            self.conflicts = conflicts
        return outcome

    # ---- edits ---------------------------------------------------------

    def add(self, text: str, priority: str = "medium", status: str = "pending",
            notes: str | None = None, crash: str | None = None, run: str | None = None,
            config: str | None = None, source: str | None = None) -> Task:
        text = _clean_text(text)
        _check_choice("priority", priority, PRIORITIES)
        _check_choice("status", status, STATUSES)

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
            changes["text"] = _clean_text(changes["text"])
        if "status" in changes:
            _check_choice("status", changes["status"], STATUSES)
        if "priority" in changes:
            _check_choice("priority", changes["priority"], PRIORITIES)
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


def _clean_text(text: str) -> str:
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("a task needs some text")
    return text


def _check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


# ---- what the other panes call ------------------------------------------

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


def parse_threshold(text: str) -> float | None:
    """An efficiency threshold as an operator types it: a percentage ('10', '12.5%'), or 'off' (None).
    ValueError with one line for anything else."""
    if text.strip().lower() == "off":
        return None
    try:
        pct = float(text.strip().rstrip("%"))
    except ValueError:
        raise ValueError(f"bad threshold {text!r}: a percentage like 10, or 'off'") from None
    if not 0 < pct <= 100:
        raise ValueError(f"bad threshold {text!r}: between 0 and 100")
    return pct


def refusal(exc: Exception) -> str:
    """One line for an edit the board refused (no such task or suggestion, a bad value, a read-only board)."""
    if isinstance(exc, (KeyError, ValueError)) and exc.args:
        return str(exc.args[0])
    return str(exc) or "no such task"
