"""A dialog over a tab, with a footer of its own.

A modal screen is drawn over the tab's screen, footer included: without its own
footer the operator reads the tab's keys (`l launch  k kill`) under a question
that answers only `y` and `n`. Each dialog's footer names the keys it takes.
"""
from __future__ import annotations

from textual.screen import ModalScreen, ScreenResultType
from textual.widgets import Footer


class Dialog(ModalScreen[ScreenResultType]):
    def on_mount(self) -> None:
        self.mount(Footer())
