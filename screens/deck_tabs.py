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

A tab is chosen by the tab keys alone, never by where the focus lands. When a
switch hides the focused table, Textual hands the focus to a sibling of it,
hidden too; left to TabbedContent, that focus took the hidden tab back, whose
own activation then moved the focus again, and the two tabs traded places
until the next key (a digit pressed while the Roofline tab was still working
out its figures was lost that way).
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

    def _on_tab_pane_focused(self, event: TabPane.Focused) -> None:
        if event.tab_pane.id != self.active:   # a focus left behind in a hidden tab: the tab stays as chosen
            event.stop()
            event.prevent_default()
