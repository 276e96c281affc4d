"""The tab strip reads from its first tab at the sizes operators use: the `?` panel covers the tabs'
right side instead of narrowing the screen (which scrolled the strip to keep the open tab in view),
and a strip wider than the terminal (80x24, a busy host's tab titles) drops the titles' counts
before it scrolls, so it never starts mid-word."""
from __future__ import annotations

from textual.widgets import Tabs

from screens.app import GpudeckApp
from tests.harness import wait_until
from widgets.keys_panel import KeysPanel


def _strip_from_the_start(app) -> bool:
    tabs = app.tabs.query_one(Tabs)
    scroll = tabs.query_one("#tabs-scroll")
    first = tabs.query("Tab").first()
    return scroll.scroll_x == 0 and first.region.x == tabs.region.x


def _every_tab_whole(app) -> bool:
    tabs = app.tabs.query_one(Tabs)
    return all(tab.region.width > 0 and tabs.region.contains_region(tab.region) for tab in tabs.query("Tab"))


async def test_keys_panel_leaves_the_tab_strip_as_it_was(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.started.is_set(), what="the console started")
        await pilot.press("6")
        await wait_until(pilot, lambda: app.tabs.active == "campaign", what="the Campaign tab")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: bool(app.screen.query_children(KeysPanel)), what="the keys panel")
        await pilot.pause()
        assert _strip_from_the_start(app), "the keys panel scrolled the tab strip"
        panel = app.screen.query_children(KeysPanel).first()
        assert panel.region.y >= app.tabs.query_one(Tabs).region.bottom  # below the strip, not over it


async def test_a_strip_wider_than_80_columns_drops_counts_not_its_start(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(80, 24)) as pilot:
        await wait_until(pilot, lambda: app.started.is_set(), what="the console started")
        # a busy host's titles: a dozen configs, two up and one crashed; a sweep; tasks
        app._set_tab_label("server", "12 2● 1✖ crashed")
        app._set_tab_label("bench", "4/6 levels")
        await pilot.press("6")
        await wait_until(pilot, lambda: app.tabs.active == "campaign", what="the Campaign tab")
        await pilot.pause()
        assert _strip_from_the_start(app), "the tab strip starts mid-word"
        assert _every_tab_whole(app)
        labels = [str(tab.label) for tab in app.tabs.query_one(Tabs).query("Tab")]
        assert labels[1].startswith("2 Server") and labels[5].startswith("6 Campaign")
