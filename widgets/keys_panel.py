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
    # On a layer of its own, over the tab's right side, between the tab strip and the footer: docked
    # in the screen's layout it narrowed every tab (the strip scrolled to keep the open tab in view,
    # the tables lost columns) while it was open.
    DEFAULT_CSS = """
    KeysPanel { layer: keys; dock: right; width: 44; max-width: 45%; margin-top: 3;
                border-left: wide $accent; background: $panel; padding: 0 1; }
    """

    def __init__(self, groups: list[tuple[str, list[tuple[str, str]]]], **kwargs) -> None:
        super().__init__(**kwargs)
        self.groups = groups
        self.can_focus = False

    ABOVE, BELOW = 3, 1  # the host line and the tab strip above it, the footer below

    def fit(self, screen_height: int) -> None:
        """As tall as the screen between the tab strip and the footer."""
        self.styles.height = max(3, screen_height - self.ABOVE - self.BELOW)

    def on_mount(self) -> None:
        self.fit(self.screen.size.height)

    def compose(self):
        yield Static(keys_text(self.groups), id="keys-text")

    def show(self, groups: list[tuple[str, list[tuple[str, str]]]]) -> None:
        self.groups = groups
        self.query_one("#keys-text", Static).update(keys_text(groups))
