"""Small text formats shared by the CLI and the screens."""
from __future__ import annotations


def duration(seconds: float | None) -> str:
    """How long something has run: '45s', '12m05s', '2h13m'; 'N/A' when unknown."""
    if seconds is None:
        return "N/A"
    seconds = int(max(0, seconds))  # clock skew never shows a negative age
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"
