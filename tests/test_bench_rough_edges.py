"""Bench rough edges: a level the operator stopped reads 'stopped' (not a failure, no rerun
suggested), a p99 is never cut shorter than its p50, the requests field says what '1c' means."""
from __future__ import annotations

from console.bench.live import LevelView
from profiles.task_suggestion import sweep_suggestions
from tests.harness import wait_until
from widgets.bench_table import level_cells


def _level(**summary) -> LevelView:
    base = {"status": "partial", "completed": 0, "failed": 256, "concurrency": 256}
    base.update(summary)
    return LevelView(concurrency=256, num_prompts=256, label="c=256", status=base["status"], completed=0,
                     failed=256, summary=base)


def test_a_stopped_level_reads_stopped_and_suggests_no_rerun():
    cells = level_cells(_level(stopped=True, not_sent=200))
    assert cells[1].plain == "■ stopped"
    assert "stopped by the operator" in cells[-1].plain
    assert sweep_suggestions({"levels": [_level(stopped=True).summary]}, "run-a") == []
    failed = sweep_suggestions({"levels": [_level().summary]}, "run-a")
    assert len(failed) == 1 and "partial" in failed[0].text  # a level that really failed still does


def test_latency_pairs_fit_their_column_whole():
    level = LevelView(concurrency=1, status="ok", completed=10,
                      summary={"status": "ok", "ttft_ms": {"median": 5718.8, "p99": 5718.9},
                               "tpot_ms": {"median": 12.34, "p99": 99.96}})
    cells = level_cells(level)
    ttft, tpot = cells[5].plain, cells[6].plain
    assert ttft == "5,719 / 5,719" and len(ttft) <= 17  # was '5,718.8 / 5,718.9', cut to '5,718.8 / 5,718'
    assert tpot == "12.3 / 100.0"


async def test_every_field_label_is_shown_whole_at_100_columns():
    """Each label is its field's border title: at 100 columns every one reads in full (none cut to
    '…'), with the requests field saying what 1c means, and the Start button is on screen."""
    from textual.app import App
    from textual.widgets import Input

    from widgets.bench_form import FIELDS, BenchForm

    class FormApp(App):
        def compose(self):
            yield BenchForm()

    app = FormApp()
    async with app.run_test(size=(100, 30)) as pilot:
        form = app.query_one(BenchForm)
        form.set_defaults({"num_prompts": "1c"})
        box = form.query_one("#bf-num_prompts", Input)
        start = form.query_one("#bf-start")
        await wait_until(pilot, lambda: box.region.width > 0 and box.value == "1c", what="the field laid out with 1c")
        screen = "\n".join("".join(seg.text for seg in strip) for strip in app.screen._compositor.render_strips())
        for _, label, *_ in FIELDS:
            assert f" {label} " in screen, label
        assert "requests (2c = 2×streams)" in screen and "…" not in screen
        assert " model " in screen and " API " in screen and "Start" in screen
        assert start.region.right <= 100 and box.value == "1c"


async def test_a_sweep_that_never_started_keeps_the_earlier_result(tmp_path, monkeypatch):
    """A pre-flight lost to a link drop ends the new sweep before any level: the earlier result
    stays on screen and the error says the new one did not start."""
    import os

    from console import demo
    from console.bench.live import SweepView
    from console.runtime import events as ev
    from screens.app import GpudeckApp

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    try:
        app = GpudeckApp(profile_name="demo")
        async with app.run_test(size=(100, 30)) as pilot:
            pane = app.panes["bench"]
            await pilot.press("3")
            await wait_until(pilot, lambda: app.tabs.active == "bench", what="the Bench tab")
            earlier = SweepView(run_id="sweep-earlier", levels=[LevelView(concurrency=1, status="ok", completed=8)])
            pane.runtime_event(ev.SweepProgress("demo", earlier, False, None))
            assert pane.view is earlier
            failed = SweepView(errors=["not started: /v1/models: ReadError"])
            pane.runtime_event(ev.SweepProgress("demo", failed, False, "not started: /v1/models: ReadError"))
            await pilot.pause()
            assert pane.view is earlier
            error = str(pane.query_one("#bp-error").render())
            assert "did not start" in error and "ReadError" in error and "earlier" in error
    finally:
        world.close()
