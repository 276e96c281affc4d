"""The demo end to end with Pilot: launch the crashing config, sweep, see the crash named
everywhere, and a task suggested from it. The simulator runs for real as a subprocess."""
from __future__ import annotations

import pytest

from console import demo
from profiles import store
from console.store.task_board import TaskBoard
from screens.app import GpudeckApp
from screens.confirm import Confirm
from tests.harness import wait_until


async def _until(pilot, predicate, seconds=60.0, what=""):
    await wait_until(pilot, predicate, seconds, what)


@pytest.fixture
def demo_world(tmp_path, monkeypatch):
    # the demo points GPUDECK_HOME and PATH at its temp world; monkeypatch restores them
    monkeypatch.setenv("PATH", __import__("os").environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_SIM_EFFICIENCY", "0.3")  # same story, ten times faster
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    profile = store.load("demo")
    profile.bench.concurrency = "1,2,256,512"
    # The simulator dies once 256 streams are in flight together. Streams of the demo's 16 tokens can
    # end before a busy client has opened the 256th, and the level then passes; long streams overlap.
    profile.bench.output_len = 256
    store.save(profile)
    yield world
    world.close()


@pytest.mark.slow
async def test_launch_sweep_crash_is_named_and_a_task_is_suggested(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        server = app.panes["server"]
        await pilot.press("2")
        await _until(pilot, lambda: len(server.configs) == 3, what="configs")
        table = server.query_one("#configs")
        table.move_cursor(row=[c.name for c in server.configs].index("run_tp8_ep8_crash"))
        await _until(pilot, lambda: server.selected == "run_tp8_ep8_crash", what="the crashing config selected")
        assert any("this is TP8" in w for w in server._selected_config().warnings)
        await pilot.press("l")
        await _until(pilot, lambda: isinstance(app.screen, Confirm), what="launch confirmation")
        await pilot.press("y")
        await _until(pilot, lambda: server.latest.get("run_tp8_ep8_crash") is not None
                     and server.latest["run_tp8_ep8_crash"].state == "ready", what="server ready")

        bench = app.panes["bench"]
        await pilot.press("3")
        await pilot.press("m")
        await _until(pilot, lambda: bench.query_one("#bf-model").value == "zai-org/GLM-5-NVFP4", what="models")
        await pilot.press("r")
        # the first sweep on this host, up to 512 streams: the Bench tab asks first
        await _until(pilot, lambda: isinstance(app.screen, Confirm), what="larger-sweep confirmation")
        await pilot.press("y")
        await _until(pilot, lambda: bench.proc is not None, what="sweep start")
        await _until(pilot, lambda: bench.proc is None, seconds=120, what="sweep end")
        statuses = [(lv.concurrency, lv.status) for lv in bench.view.levels]
        assert statuses == [(1, "ok"), (2, "ok"), (256, "failed"), (512, "skipped")]
        assert "server died" in bench.view.levels[2].explanation
        await _until(pilot, lambda: app.summaries["bench"].startswith("✖"), what="bench tab title")

        await _until(pilot, lambda: server.last_crash is not None, what="crash record")
        crash = server.last_crash
        assert crash.cls == "cuda-illegal-address"
        assert crash.config == "run_tp8_ep8_crash"
        assert crash.sweep and crash.sweep.endswith("level 256")
        await _until(pilot, lambda: app.summaries["server"] == "1 ✖", what="server tab title")

        # the GPUs now read 100% at 0 MiB with no process: the stale counter is named
        await _until(pilot, lambda: "STALE" in app.summaries.get("gpus", ""), seconds=30, what="stale GPUs")
        await pilot.press("1")  # a hidden tab draws its latest sample when it is shown
        warning = app.panes["gpus"].query_one("#gpus-warning")
        await _until(pilot, lambda: "server run_tp8_ep8_crash crashed" in str(warning.render()), seconds=15,
                     what="the stale warning naming the crash")

        # the Roofline tab picks the new run up by itself and reads its efficiency
        await _until(pilot, lambda: app.summaries.get("roofline", "").endswith("%"), seconds=15,
                     what="roofline efficiency")

        board = TaskBoard.for_profile("demo")
        texts = [s.text for s in board.suggestions]
        assert any(t.startswith("Investigate cuda-illegal-address in run_tp8_ep8_crash") for t in texts), texts
        assert [t.text for t in board.tasks][:1] == ["Complete theoretical max single-stream perf analysis"]
        assert len(board.tasks) == 4  # suggested, never added silently
