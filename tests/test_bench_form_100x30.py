"""The Bench setup in a 100x30 split (the tab's pane is 26 rows there): a refused value's reason is
on screen, not below the level table, and tabbing into a field keeps what it holds (the next key
is added at its end, not typed over the whole levels list)."""
from __future__ import annotations

from textual.widgets import Input

from screens.bench_pane import BenchPane
from tests.harness import wait_until
from console.bench.events import parse_line
from console.bench.results import RunStore
from tests.test_bench_pane import OK, BenchApp, press_start

PANE_AT_100x30 = (100, 27)  # the pane (26 rows) and a footer: the console less its header and tab strip


def saved_long_run(run_id: str = "sweep-20261129-140000") -> None:
    """A saved sweep of twelve levels (1 to 2048 streams): its table takes the rows the pane has."""
    events = [parse_line(line) for line in OK.read_text().splitlines()]
    start = next(e for e in events if e["event"] == "run-start")
    level = next(e for e in events if e["event"] == "level-end")["summary"]
    store = RunStore("local", run_id)
    store.save({"run_id": run_id, "url": start["url"], "model": start["model"], "workload": start["workload"],
                "started": "2026-11-29T14:00:00", "status": "done", "path": str(store.path),
                "levels": [{**level, "concurrency": 2 ** n} for n in range(12)]})


async def test_a_refused_concurrency_says_why_on_screen_with_a_run_shown():
    saved_long_run()
    app = BenchApp()
    async with app.run_test(size=PANE_AT_100x30) as pilot:
        pane = app.query_one(BenchPane)
        await wait_until(pilot, lambda: pane.view.levels and pane.has_class("hide-form"), what="the saved run shown")
        pane.query_one("BenchLevelTable").focus()
        await pilot.press("f")  # the setup back, over the run
        await wait_until(pilot, lambda: not pane.has_class("hide-form"), what="the setup shown")
        pane.query_one("#bf-levels", Input).value = "q3"
        await press_start(pilot, confirm=False)
        error = pane.query_one("#bp-error")
        await wait_until(pilot, lambda: "q3" in str(error.render()), what="the reason the levels are refused")
        await pilot.pause()
        screen = app.screen.region
        assert error.region.height >= 1 and screen.contains_region(error.region), \
            f"the reason is drawn at {error.region}, off the {screen.size} screen"
        assert error.region.bottom <= screen.bottom - 1  # above the footer


async def test_tab_into_a_field_keeps_its_value():
    app = BenchApp()
    async with app.run_test(size=PANE_AT_100x30) as pilot:
        url = app.query_one("#bf-url", Input)
        levels = app.query_one("#bf-levels", Input)
        url.focus()
        await pilot.press("tab")
        await wait_until(pilot, lambda: app.focused is levels, what="the levels field focused")
        before = levels.value
        await pilot.press("comma", "4")
        await wait_until(pilot, lambda: levels.value != before, what="the keys typed")
        assert levels.value == before + ",4"
