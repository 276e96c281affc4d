"""The `?` panel: the keys of the tab on screen first, in groups, then the keys that work everywhere.

It draws the groups it is handed; the app decides what they hold.
"""
from __future__ import annotations

from rich.text import Text
from textual.containers import VerticalScroll
from textual.widgets import Static

from console.safe_text import append_safe


def keys_text(groups: list[tuple[str, list[tuple[str, str]]]]) -> Text:
    """Each group as a bold title over `key  what it does` rows."""
    text = Text()
    width = max((len(key) for _, rows in groups for key, _ in rows), default=1)
    for n, (title, rows) in enumerate(groups):
        if n:
            text.append("\n")
        append_safe(text, title, "bold")
        for key, what in rows:
            text.append("\n ")
            append_safe(text, f"{key:>{width}}", "bold cyan")
            text.append("  ")
            append_safe(text, what)
    return text


class KeysPanel(VerticalScroll):
    DEFAULT_CSS = """
    KeysPanel { dock: right; width: 44; max-width: 45%; height: 1fr;
                border-left: wide $accent; background: $panel; padding: 0 1; }
    """

    def __init__(self, groups: list[tuple[str, list[tuple[str, str]]]], **kwargs) -> None:
        super().__init__(**kwargs)
        self.groups = groups
        self.can_focus = False

    def compose(self):
        yield Static(keys_text(self.groups), id="keys-text")

    def show(self, groups: list[tuple[str, list[tuple[str, str]]]]) -> None:
        self.groups = groups
        self.query_one("#keys-text", Static).update(keys_text(groups))
