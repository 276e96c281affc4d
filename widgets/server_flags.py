"""Rows for the flags table: script against effective (from the log), or config against config.

Plain data in, Rich text out; mismatches are highlighted, unknown is "N/A".
"""
from __future__ import annotations

from rich.text import Text

from console.safe_text import safe_text


def _show(value) -> str:
    from console.servers.launch import show

    return show(value)


def flag_rows(parsed, effective: dict | None) -> list[tuple[str, Text, Text]]:
    """(label, script value, effective value) per flag; a mismatch is red with ⚠."""
    if parsed is None:
        return []
    from console.servers.launch import compare

    rows = []
    for check in compare(parsed, effective or {}):
        if check.script is None and (effective is None or check.effective is None):
            continue
        script = safe_text(_show(check.script))
        if effective is None:
            eff = Text("(not started)" if not rows else "", style="grey50")
        elif check.mismatch:
            eff = safe_text(f"{_show(check.effective)} ⚠", style="bold red")
            script.stylize("bold red")
        else:
            eff = safe_text(_show(check.effective))
        rows.append((check.label, script, eff))
    return rows


def diff_rows(left, right) -> list[tuple[str, Text, Text]]:
    """(label, left value, right value) for every flag either config sets; changes in yellow."""
    from console.servers.launch import diff

    rows = []
    for row in diff(left, right):
        if row.left is None and row.right is None:
            continue
        style = "bold yellow" if row.differs else ""
        rows.append((row.label, safe_text(_show(row.left), style=style), safe_text(_show(row.right), style=style)))
    return rows
