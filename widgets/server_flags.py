"""Rows for the flags table: script against effective (from the log), or config against config.

Plain data in, Rich text out; mismatches are highlighted, unknown is "N/A".
"""
from __future__ import annotations

from rich.text import Text

from console.safe_text import safe_text


def _show(value, key: str = "", short: bool = False) -> str:
    """A value as the table prints it; `short` (a narrow pane) keeps a model's last path part."""
    from console.servers.launch import show

    text = show(value)
    if short and key == "model" and "/" in text.rstrip("/"):
        return "…/" + text.rstrip("/").rsplit("/", 1)[1]
    return text


def flag_rows(parsed, effective: dict | None, short: bool = False) -> list[tuple[str, Text, Text]]:
    """(label, script value, effective value) per flag; a mismatch is red with ⚠. With `short`,
    a model path keeps its last part, so both columns fit a 100-column split."""
    if parsed is None:
        return []
    from console.servers.launch import compare

    rows = []
    for check in compare(parsed, effective or {}):
        if check.script is None and (effective is None or check.effective is None):
            continue
        script = safe_text(_show(check.script, check.key, short))
        if effective is None:
            eff = Text("(not started)" if not rows else "", style="grey50")
        elif check.mismatch:
            eff = safe_text(f"{_show(check.effective, check.key, short)} ⚠", style="bold red")
            script.stylize("bold red")
        else:
            eff = safe_text(_show(check.effective, check.key, short))
        rows.append((check.label, script, eff))
    return rows


def diff_rows(left, right, short: bool = False) -> list[tuple[str, Text, Text]]:
    """(label, left value, right value) for every flag either config sets; changes in yellow."""
    from console.servers.launch import diff

    rows = []
    for row in diff(left, right):
        if row.left is None and row.right is None:
            continue
        style = "bold yellow" if row.differs else ""
        rows.append((row.label, safe_text(_show(row.left, row.key, short), style=style),
                     safe_text(_show(row.right, row.key, short), style=style)))
    return rows
