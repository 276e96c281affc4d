"""How one task looks on the board: marks, colours and cells, from plain data."""
from __future__ import annotations

from rich.text import Text

from console.safe_text import append_safe, clean_line, safe_text

from profiles.task_model import STATUS_MARKS, Task
from profiles.task_suggestion import Suggestion

STATUS_STYLE = {"in_progress": "bold yellow", "pending": "cyan", "completed": "green", "cancelled": "grey50"}
STATUS_MARK = {status: (mark, STATUS_STYLE[status]) for status, mark in STATUS_MARKS.items()}
PRIORITY_STYLE = {"high": "bold red", "medium": "yellow", "low": "grey62"}


def visible_tasks(tasks: list[Task], hide_done: bool, needle: str) -> list[Task]:
    """The rows to draw: done and cancelled hidden on request, then the filter (any words, any case)."""
    words = needle.lower().split()
    out = []
    for task in tasks:
        if hide_done and not task.is_open:
            continue
        hay = " ".join(filter(None, (task.text, task.notes, task.crash, task.run, task.config,
                                     task.priority, task.status))).lower()
        if all(w in hay for w in words):
            out.append(task)
    return out


def task_cells(task: Task) -> tuple[Text, Text, Text, Text]:
    mark, mark_style = STATUS_MARK[task.status]
    done = not task.is_open
    text_style = "grey50 strike" if task.status == "cancelled" else ("grey62" if done else "")
    text = safe_text(task.text, style=text_style)
    if task.conflict_of:
        text.append(f"  ⚠ kept beside #{task.conflict_of} after a clash", style="bold magenta")
    links = [f"{name} {clean_line(getattr(task, name))}" for name in ("crash", "config", "run") if getattr(task, name)]
    return (Text(mark, style=mark_style),
            Text(task.priority, style="grey50" if done else PRIORITY_STYLE[task.priority]),
            text,
            Text(" · ".join(links), style="grey50"))


def suggestion_line(suggestions: list[Suggestion], readonly: bool) -> Text:
    """'✚ 3 suggested · s list · y accept · n dismiss  Investigate …', the oldest first.

    The keys come before the text, and the line is cut (never wrapped) at the edge, so the
    keys are always in view however long the suggestion."""
    if not suggestions:
        return Text("")
    first = suggestions[0]
    line = Text(f"✚ {len(suggestions)} suggested" if len(suggestions) > 1 else "✚ suggested",
                style="bold green", no_wrap=True, overflow="ellipsis")
    keys = ["s list"] if len(suggestions) > 1 else []
    if not readonly:
        keys += ["y accept", "n dismiss"]
    if keys:
        line.append(" · " + " · ".join(keys), style="grey62")
    line.append("  ")
    append_safe(line, first.text)
    return line


def detail_line(task: Task | None) -> Text:
    """Everything about the selected task that the row leaves out."""
    if task is None:
        return Text("")
    line = Text(f"#{task.id} · {task.status.replace('_', ' ')} · {task.priority}", style="grey62")
    if task.created:
        line.append(f" · created {task.created[:16].replace('T', ' ')}", style="grey62")
    if task.updated and task.updated != task.created:
        line.append(f" · updated {task.updated[:16].replace('T', ' ')}", style="grey62")
    if task.notes:
        append_safe(line, f" · {task.notes}")
    return line
