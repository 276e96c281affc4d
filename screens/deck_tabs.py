"""The console's tabs, whose containers draw only blank lines.

A tab switch repaints the whole body: the tab container and its content
switcher (both as large as the body), the tab pane and the pane inside it each
drew every one of their lines in full, styles and filters included, though
what they show is their background wherever the widgets inside leave a gap.
Marked blank (Textual's `BLANK`: no border, no content of its own), each draws
one blank line of its background, reused for every row. That is a third of the
lines a switch drew, and the same screen (the snapshots are unchanged).

A border, border title or content on one of these would be lost, so
tests/test_deck_tabs.py checks that none has one.
"""
from __future__ import annotations

from textual.widgets import ContentSwitcher, TabbedContent, TabPane


class DeckTabPane(TabPane):
    BLANK = True


class DeckTabs(TabbedContent):
    BLANK = True

    def on_mount(self) -> None:
        # the switcher is built inside TabbedContent.compose; it is as blank as its container
        self.query_one(ContentSwitcher).BLANK = True
