"""What a profile's task board decides, apart from its file: the board's parsed state, how two
consoles' edits merge, the order tasks show in, and how operators' values are checked.

The file itself (tasks.toml: its layout, reader, writer and lock) is
console.store.tasks; the editing session that saves every edit is
console.store.task_board.TaskBoard.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .task_merge import merge_boards
from .task_model import PRIORITIES, Task, task_to_dict
from .task_suggestion import Suggestion, suggestion_to_dict

__all__ = ["BoardState", "BoardReadOnly", "merge_states", "sort_tasks", "counts_summary", "parse_threshold", "refusal",
           "task_text", "check_choice"]

FILE_VERSION = 1
DEFAULT_THRESHOLD_PCT = 10.0
STATUS_CYCLE = ("pending", "in_progress", "completed", "cancelled")
_GROUP_RANK = {"in_progress": 0, "pending": 1, "completed": 2, "cancelled": 3}
_PRIORITY_RANK = {p: i for i, p in enumerate(PRIORITIES)}


class BoardReadOnly(Exception):
    """The board cannot be edited: its file is broken, or the console is read-only."""


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


def task_text(text: str) -> str:
    """A task's text on one line; ValueError when nothing is left."""
    text = " ".join(str(text).split())
    if not text:
        raise ValueError("a task needs some text")
    return text


def check_choice(name: str, value: str, choices: tuple[str, ...]) -> None:
    """ValueError naming `name` unless `value` is one of `choices`."""
    if value not in choices:
        raise ValueError(f"{name} must be one of {', '.join(choices)}, got {value!r}")


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
