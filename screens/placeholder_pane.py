"""A tab whose pane has not been built: it says in one line what it will hold."""
from __future__ import annotations

from textual.app import ComposeResult
from textual.widgets import Static

from .pane import Pane


class PlaceholderPane(Pane):
    def __init__(self, title: str, promise: str, **kwargs) -> None:
        super().__init__(**kwargs)
        self.TAB_TITLE = title
        self.promise = promise

    def compose(self) -> ComposeResult:
        yield Static(f"{self.TAB_TITLE}: {self.promise}", classes="placeholder")
