"""A key's effect is drawn when the key is handled, not by whatever refresh comes next.

Each test holds back the refresh that used to draw the effect (a sweep that reports nothing, no
state event, the chip bar's once-a-second timer left out) and looks right after the key: on
the old code each of these showed nothing new until that refresh came, or lost the effect.
"""
from __future__ import annotations

from console.runtime import events as ev
from screens.bench_pane import BenchPane
from tests.harness import wait_until
from tests.test_bench_pane import OK, BenchApp, press_start, replaying, run_to_end


async def test_bench_stop_says_stopping_before_the_sweep_reports_again():
    """s, y: the status line says the sweep is stopping at once. The sweep here is held (it
    reports nothing more), so the line cannot come from its next report."""
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(OK, "--hold-after", "5")   # run-start, level-start, three ticks, then silence
        await press_start(pilot)
        status = lambda: str(pane.query_one("#bp-status").render())  # noqa: E731
        await wait_until(pilot, lambda: pane.proc is not None and pane.has_class("running")
                         and len(pane.view.series) == 3 and "client lag" in status(), what="the held sweep drawn")
        reports: list[ev.SweepProgress] = []
        seen = pane.runtime_event
        pane.runtime_event = lambda event: (reports.append(event) if isinstance(event, ev.SweepProgress) else None,
                                            seen(event))
        stop = pane.runtime.stop_sweep
        asked: list[bool] = []
        pane.runtime.stop_sweep = lambda: asked.append(True) or True   # asked, but the generator is not told yet
        await pilot.press("s")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "Confirm" and app.screen.focused is not None,
                         what="the stop confirmation")
        await pilot.press("y")
        assert asked == [True]
        assert "stopping: the current level is finishing its records" in status()
        assert reports == []                               # drawn by the key, not by a report
        pane.runtime.stop_sweep = stop
        assert stop()                                      # now the generator is told, and ends
        await run_to_end(pilot, pane)
