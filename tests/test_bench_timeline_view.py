"""The Bench tab's timeline view: a saved run's series on one time axis with its marks, two at a time,
`v` for the next two; at 100x30 and 160x45. The run is the simulator's NCCL crash at 256 streams,
recorded with the nvidia-smi stand-in as the sweep's GPU sampler (tests/fixtures/bench/make_timeline.py)."""
from __future__ import annotations

import shutil
from pathlib import Path

from textual.app import App

from console.bench.timeline_view import chart_data
from console.store.timeline import read_timeline, timeline_path
from screens.bench_pane import BenchPane
from screens.bench_timeline import TimelineScreen
from tests.harness import wait_until
from tests.test_bench_pane import DIED, BenchApp, saved_run
from widgets.bench_table import BenchLevelTable
from widgets.timeline_chart import TimelineChart

RECORDED = Path(__file__).parent / "fixtures" / "bench" / "sim-crash-256.timeline.json"
RUN_ID = "sweep-20261207-190000"
RUN = "sim-crash-256.json"       # the run document the recorded timeline sits beside (read_timeline's key)


def _data():
    tl = read_timeline(RECORDED.with_name(RUN))
    assert tl is not None
    return chart_data(tl, RUN_ID)


def test_the_chart_data_keeps_every_series_and_the_marks_of_the_crash():
    data = _data()
    assert not data.missing(), data.missing()     # client, server and GPU series all recorded
    kinds = [m.kind for m in data.marks]
    assert [m.label for m in data.marks if m.kind == "level-start"] == ["c=4", "c=64", "c=256"]
    assert {"first failure", "server died", "decisive line"} <= set(kinds)
    assert "level-end" not in kinds                # a level's end is the next one's start on a chart
    power = data.lines["GPU W"].points
    assert power and all(8 * 34 <= w <= 8 * 600 for _t, w in power)   # eight GPUs' power, summed
    kv = dict(data.lines["KV %"].points)
    stored = {p[0]: p[4] for p in read_timeline(RECORDED.with_name(RUN)).series["server"]}
    assert kv and kv == {t: f * 100 for t, f in stored.items()}    # shown as a percentage of the stored fraction
    assert data.span >= max(m.t for m in data.marks)


class TimelineApp(App):
    def on_mount(self) -> None:
        self.push_screen(TimelineScreen(_data()))


def test_timeline_view_snapshot_100x30(snap_compare):
    assert snap_compare(TimelineApp(), terminal_size=(100, 30))


def test_timeline_view_snapshot_160x45(snap_compare):
    assert snap_compare(TimelineApp(), terminal_size=(160, 45))


async def test_t_on_the_bench_tab_shows_the_runs_timeline_and_v_cycles_its_series():
    path = saved_run(DIED, RUN_ID)
    shutil.copy(RECORDED, timeline_path(path))
    app = BenchApp(url=None)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(BenchPane)
        await wait_until(pilot, lambda: pane.view.run_id == RUN_ID, what="the saved run on the tab")
        table = pane.query_one(BenchLevelTable)
        table.focus()   # out of the setup form, whose fields take letters
        await wait_until(pilot, lambda: app.focused is table, what="the level table focused")
        await pilot.press("t")
        await wait_until(pilot, lambda: isinstance(app.screen, TimelineScreen), what="the timeline view")
        screen = app.screen
        assert screen.data.run_id == RUN_ID and screen.shown() == ("tok/s", "in flight")
        head = str(screen.query_one("#tl-head").render())
        assert head.startswith(f"timeline of {RUN_ID} · tok/s and in flight")
        marks = str(screen.query_one("#tl-marks").render())
        assert "first failure" in marks and "decisive line: nccl" in marks
        chart = screen.query_one(TimelineChart)
        assert chart.region.height >= 15 and chart.region.width >= 96   # the chart takes the screen's room
        seen = [screen.shown()]
        for _ in range(len(screen.data.views)):
            await pilot.press("v")
            seen.append(screen.shown())
        assert seen[1] == ("KV %", "waiting") and seen[-1] == seen[0]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, TimelineScreen), what="the view closed")


async def test_a_run_without_a_timeline_says_so():
    saved_run(DIED, RUN_ID)
    app = BenchApp(url=None)
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.query_one(BenchPane)
        await wait_until(pilot, lambda: pane.view.run_id == RUN_ID, what="the saved run on the tab")
        table = pane.query_one(BenchLevelTable)
        table.focus()   # out of the setup form, whose fields take letters
        await wait_until(pilot, lambda: app.focused is table, what="the level table focused")
        await pilot.press("t")
        await wait_until(pilot, lambda: "no timeline recorded" in pane._error_text, what="the reason")
        assert not isinstance(app.screen, TimelineScreen)
