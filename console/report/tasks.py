"""The task board written as Markdown: for `gpudeck tasks export` and the findings report."""
from __future__ import annotations

from typing import Iterable

from profiles.task_model import Task
from profiles.task_suggestion import Suggestion

from ..safe_text import markdown_code, markdown_text

GROUPS = (("in_progress", "In progress"), ("pending", "Pending"),
          ("completed", "Completed"), ("cancelled", "Cancelled"))


def _md(text: str) -> str:
    """Keep operator text (and a suggestion's, drawn from logs) from becoming markup or HTML."""
    return markdown_text(text)


def task_line(task: Task) -> str:
    box = "x" if task.status == "completed" else " "
    links = [f"{name} {markdown_code(getattr(task, name))}" for name in ("crash", "run", "config") if getattr(task, name)]
    tail = f" ({'; '.join(links)})" if links else ""
    strike = ("~~", "~~") if task.status == "cancelled" else ("", "")
    line = f"- [{box}] **{task.priority}** {strike[0]}{_md(task.text)}{strike[1]}{tail} · #{task.id}"
    if task.notes:
        line += f"\n  - {_md(task.notes)}"
    return line


def board_markdown(tasks: Iterable[Task], suggestions: Iterable[Suggestion] = (),
                   heading_level: int = 2) -> str:
    """Tasks grouped in board order (they arrive sorted), then waiting suggestions."""
    tasks = list(tasks)
    suggestions = list(suggestions)
    hashes = "#" * heading_level
    out: list[str] = []
    if not tasks:
        out.append("No tasks on the board yet.\n")
    for status, title in GROUPS:
        group = [t for t in tasks if t.status == status]
        if group:
            out.append(f"{hashes}# {title} ({len(group)})\n")
            out.extend(task_line(t) for t in group)
            out.append("")
    if suggestions:
        out.append(f"{hashes}# Suggested, not yet accepted ({len(suggestions)})\n")
        out.extend(f"- {_md(s.text)} ({markdown_code(s.key)})" for s in suggestions)
        out.append("")
    return "\n".join(out).rstrip("\n") + "\n"
