"""One task on a board, and how it is written to and read from TOML."""
from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from typing import Any

STATUSES = ("pending", "in_progress", "completed", "cancelled")
PRIORITIES = ("high", "medium", "low")
OPEN_STATUSES = ("in_progress", "pending")
DONE_STATUSES = ("completed", "cancelled")
STATUS_MARKS = {"in_progress": "▶", "pending": "●", "completed": "✔", "cancelled": "✖"}  # the board's and the CLI's
LINK_FIELDS = ("crash", "run", "config")


def now_iso() -> str:
    """UTC with microseconds: the merge orders edits by this string."""
    return datetime.now(timezone.utc).isoformat(timespec="microseconds")


@dataclass(frozen=True)
class Task:
    id: int
    text: str
    status: str = "pending"
    priority: str = "medium"
    order: float = 0.0
    created: str = ""
    updated: str = ""
    notes: str | None = None
    crash: str | None = None      # crash record id (crashes/<id>.json)
    run: str | None = None        # run file name in runs/
    config: str | None = None     # launch config name
    source: str | None = None     # the suggestion key this task came from
    conflict_of: int | None = None  # kept beside task N after a clash

    @property
    def is_open(self) -> bool:
        return self.status in OPEN_STATUSES

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


class TaskFormatError(ValueError):
    """A task table in the file is not a valid task."""


def task_from_dict(doc: Any) -> Task:
    if not isinstance(doc, dict):
        raise TaskFormatError("a task must be a table")
    tid = doc.get("id")
    if not isinstance(tid, int) or isinstance(tid, bool) or tid < 1:
        raise TaskFormatError(f"task id must be a positive integer, got {tid!r}")
    text = doc.get("text")
    if not isinstance(text, str) or not text.strip():
        raise TaskFormatError(f"task {tid}: text must be a non-empty string")
    status = doc.get("status", "pending")
    if status not in STATUSES:
        raise TaskFormatError(f"task {tid}: status {status!r} is not one of {', '.join(STATUSES)}")
    priority = doc.get("priority", "medium")
    if priority not in PRIORITIES:
        raise TaskFormatError(f"task {tid}: priority {priority!r} is not one of {', '.join(PRIORITIES)}")
    order = doc.get("order", 0.0)
    if not isinstance(order, (int, float)) or isinstance(order, bool):
        raise TaskFormatError(f"task {tid}: order must be a number")
    strings: dict[str, str | None] = {}
    for name in ("created", "updated", "notes", *LINK_FIELDS, "source"):
        value = doc.get(name)
        if value is not None and not isinstance(value, str):
            raise TaskFormatError(f"task {tid}: {name} must be a string")
        strings[name] = value
    conflict_of = doc.get("conflict_of")
    if conflict_of is not None and (not isinstance(conflict_of, int) or isinstance(conflict_of, bool)):
        raise TaskFormatError(f"task {tid}: conflict_of must be a task id")
    unknown = set(doc) - {"id", "text", "status", "priority", "order", "conflict_of", *strings}
    if unknown:
        raise TaskFormatError(f"task {tid}: unknown key {sorted(unknown)[0]!r}")
    return Task(id=tid, text=text, status=status, priority=priority, order=float(order),
                created=strings["created"] or "", updated=strings["updated"] or "",
                notes=strings["notes"], crash=strings["crash"], run=strings["run"],
                config=strings["config"], source=strings["source"], conflict_of=conflict_of)


def task_to_dict(task: Task) -> dict[str, Any]:
    return {k: v for k, v in asdict(task).items() if v is not None}
