"""The contract every tab body follows.

A pane is built once; the app calls `set_session` on mount and on every host
switch. Panes start their background work (Textual workers) there and stop
it when the session changes. A pane reports a short live summary for its tab
title with `self.set_summary("✖ crashed")`.
"""
from __future__ import annotations

from textual.binding import Binding
from textual.containers import Vertical
from textual.message import Message

from console.session import HostSession


class Pane(Vertical):
    """Base class of the five tab bodies."""

    TAB_TITLE = "?"
    # first in every tab's footer, so the way to every other key is never cut off a narrow footer
    BINDINGS = [Binding("question_mark", "app.help", "keys")]
    # Actions removed (not just greyed) from this pane when the console is --readonly.
    DESTRUCTIVE_ACTIONS: frozenset[str] = frozenset()

    class Summary(Message):
        def __init__(self, pane: "Pane", text: str) -> None:
            self.pane = pane
            self.text = text
            super().__init__()

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.session: HostSession | None = None

    async def set_session(self, session: HostSession) -> None:
        """Switch to another host; override and call super()."""
        self.session = session

    def focus_body(self) -> None:
        """Give the focus to the pane's first focusable widget, so its keys work at once."""
        from textual.widgets import Button, Input, Select

        # a table or log, not a field (digits must still switch tabs) nor a button (Enter would press it)
        for widget in self.query("*"):
            if widget.focusable and widget.display and not isinstance(widget, (Input, Select, Button)):
                widget.focus()
                return

    def set_summary(self, text: str) -> None:
        self.post_message(self.Summary(self, text))

    @property
    def readonly(self) -> bool:
        return bool(self.session and self.session.readonly)

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action in self.DESTRUCTIVE_ACTIONS and self.readonly:
            return False
        return True
