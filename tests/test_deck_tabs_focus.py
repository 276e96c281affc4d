"""The console's tabs follow the tab keys, not a focus Textual leaves behind in a tab it hides."""
from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import DataTable

from screens.deck_tabs import DeckTabPane, DeckTabs
from tests.harness import wait_until


class TwoTabs(App):
    def compose(self) -> ComposeResult:
        with DeckTabs(id="tabs"):
            with DeckTabPane("one", id="one"):
                yield DataTable(id="a")
                yield DataTable(id="b")
            with DeckTabPane("two", id="two"):
                yield DataTable(id="c")


async def test_a_focus_left_in_a_hidden_tab_does_not_take_it_back():
    app = TwoTabs()
    async with app.run_test() as pilot:
        tabs = app.query_one(DeckTabs)
        app.query_one("#a").focus()
        await wait_until(pilot, lambda: app.focused is app.query_one("#a"), what="the first table focused")
        tabs.active = "two"
        app.screen.set_focus(app.query_one("#b"))   # as Textual does when a switch hides the focused table
        await wait_until(pilot, lambda: app.focused is app.query_one("#b"), what="the focus on the hidden sibling")
        await pilot.pause()
        assert tabs.active == "two"
        app.query_one("#c").focus()
        await wait_until(pilot, lambda: app.focused is app.query_one("#c"), what="the shown tab's table focused")
        assert tabs.active == "two"
