"""The Tasks pane under Pilot: every key, other consoles' edits, a broken file, read-only."""
from __future__ import annotations

import json

from profiles.paths import profile_data_dir
from console.store.task_board import TaskBoard
from console.store.tasks import tasks_file
from screens.tasks_pane import TasksPane
from tests.tasks_pane_app import TasksApp
from widgets.task_table import TaskTable

SIZE = (140, 30)


def _seed() -> TaskBoard:
    board = TaskBoard.for_profile("local")
    t = board.add("Complete theoretical max single-stream perf analysis", priority="high")
    board.edit(t.id, status="in_progress")
    board.add("Check EP8 server status and rerun 256/512 benchmarks", priority="high")
    board.add("Try flashinfer_cutedsl MoE backend", priority="medium")
    board.add("Update findings with all new results", priority="low")
    return board


def _texts(app) -> list[str]:
    pane = app.query_one(TasksPane)
    table = pane.query_one(TaskTable)
    return [pane.board.get(tid).text for tid in table.task_ids]


def _disk():
    return {t.id: t for t in TaskBoard.for_profile("local").tasks}


async def _goto(pilot, app, text: str) -> None:
    table = app.query_one(TaskTable)
    pane = app.query_one(TasksPane)
    index = [pane.board.get(tid).text for tid in table.task_ids].index(text)
    table.move_cursor(row=index)
    await pilot.pause()


async def test_board_order_and_summary():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert _texts(app) == ["Complete theoretical max single-stream perf analysis",
                               "Check EP8 server status and rerun 256/512 benchmarks",
                               "Try flashinfer_cutedsl MoE backend", "Update findings with all new results"]
        assert app.summaries[-1] == "1▶ 3●"


async def test_a_adds_and_escape_cancels():
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("a")
        await pilot.press(*"rerun 512")
        await pilot.press("enter")
        await pilot.pause()
        assert [t.text for t in _disk().values()] == ["rerun 512"]
        await pilot.press("a", "x", "escape")
        await pilot.pause()
        assert len(_disk()) == 1
        assert app.summaries[-1] == "1●"


async def test_e_and_enter_edit_the_selected_task():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _goto(pilot, app, "Try flashinfer_cutedsl MoE backend")
        await pilot.press("e", "end", *" and trtllm", "enter")
        await pilot.pause()
        assert _disk()[3].text == "Try flashinfer_cutedsl MoE backend and trtllm"
        await pilot.press("enter")  # Enter on the row opens the editor too
        await pilot.pause()
        editor = app.query_one("#editor")
        assert editor.has_class("shown") and editor.value == _disk()[3].text
        await pilot.press("ctrl+u", *"Try another MoE backend", "enter")
        await pilot.pause()
        assert _disk()[3].text == "Try another MoE backend"


async def test_space_cycles_status():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _goto(pilot, app, "Update findings with all new results")
        seen = []
        for _ in range(4):
            await pilot.press("space")
            await pilot.pause()
            seen.append(_disk()[4].status)
        assert seen == ["in_progress", "completed", "cancelled", "pending"]
        # the cursor follows the task as it changes group
        assert app.query_one(TaskTable).selected_id == 4


async def test_plus_minus_change_priority():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _goto(pilot, app, "Update findings with all new results")
        await pilot.press("plus")
        await pilot.pause()
        assert _disk()[4].priority == "medium"
        await pilot.press("plus", "plus")
        await pilot.pause()
        assert _disk()[4].priority == "high"
        await pilot.press("minus")
        await pilot.pause()
        assert _disk()[4].priority == "medium"
        assert app.query_one(TaskTable).selected_id == 4


async def test_J_K_move_within_a_priority():
    board = TaskBoard.for_profile("local")
    for text in ("first", "second", "third"):
        board.add(text, priority="high")
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _goto(pilot, app, "first")
        await pilot.press("J")
        await pilot.pause()
        assert _texts(app) == ["second", "first", "third"]
        await pilot.press("J")
        await pilot.pause()
        assert _texts(app) == ["second", "third", "first"]
        await pilot.press("K", "K")
        await pilot.pause()
        assert _texts(app) == ["first", "second", "third"]
        assert [t.text for t in TaskBoard.for_profile("local").tasks] == ["first", "second", "third"]


async def test_d_deletes_and_u_undoes():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await _goto(pilot, app, "Try flashinfer_cutedsl MoE backend")
        await pilot.press("d")
        await pilot.pause()
        assert 3 not in _disk()
        await pilot.press("u")
        await pilot.pause()
        assert _disk()[3].text == "Try flashinfer_cutedsl MoE backend"
        assert app.query_one(TaskTable).selected_id == 3


async def test_slash_filters_and_escape_clears():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("slash", *"moe", "enter")
        await pilot.pause()
        assert _texts(app) == ["Try flashinfer_cutedsl MoE backend"]
        await pilot.press("slash", "escape")
        await pilot.pause()
        assert len(_texts(app)) == 4


async def test_h_hides_and_shows_done_and_cancelled():
    board = _seed()
    board.edit(4, status="completed")
    board.edit(3, status="cancelled")
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert len(_texts(app)) == 4
        await pilot.press("h")
        await pilot.pause()
        assert _texts(app) == ["Complete theoretical max single-stream perf analysis",
                               "Check EP8 server status and rerun 256/512 benchmarks"]
        await pilot.press("h")
        await pilot.pause()
        assert len(_texts(app)) == 4


async def test_y_accepts_and_n_dismisses_suggestions_from_events():
    crashes = profile_data_dir("local") / "crashes"
    crashes.mkdir(parents=True)
    (crashes / "c1.json").write_text(json.dumps({
        "config": "tp8-ep8-memsafe", "class": "cuda-illegal-address", "time": "2026-11-29T14:02:11+0000"}))
    runs = profile_data_dir("local") / "runs"
    runs.mkdir(parents=True)
    (runs / "sweep-1400.json").write_text(json.dumps({"levels": [
        {"concurrency": 256, "status": "failed", "completed": 13, "failed": 243}]}))
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        line = str(app.query_one("#suggestion").render())
        assert "Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)" in line
        assert app.summaries[-1] == "empty ✚2"
        assert _disk() == {}  # never added silently
        await pilot.press("y")
        await pilot.pause()
        (task,) = _disk().values()
        assert task.text == "Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)"
        assert task.crash == "c1"  # the crash record's one id
        await pilot.press("n")
        await pilot.pause()
        assert "sweep:sweep-1400:256" in TaskBoard.for_profile("local").dismissed
        assert str(app.query_one("#suggestion").render()).strip() == ""
        assert app.summaries[-1] == "1●"


async def test_r_writes_the_report():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("r")
        pane = app.query_one(TasksPane)
        await app.workers.wait_for_complete()
        await pilot.pause()
        text = (profile_data_dir("local") / "findings.md").read_text()
        assert "## Task board" in text and "Check EP8 server status" in text
        assert pane.last_report == profile_data_dir("local") / "findings.md"


async def test_j_k_move_the_cursor():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        table = app.query_one(TaskTable)
        assert table.cursor_row == 0
        await pilot.press("j", "j")
        assert table.cursor_row == 2
        await pilot.press("k")
        assert table.cursor_row == 1


async def test_another_consoles_edit_shows_within_two_seconds():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        TaskBoard.for_profile("local").add("added in another tmux pane", priority="high")
        for _ in range(20):
            await pilot.pause(0.1)
            if "added in another tmux pane" in _texts(app):
                break
        assert "added in another tmux pane" in _texts(app)
        assert app.summaries[-1] == "1▶ 4●"


async def test_corrupt_file_shows_the_error_and_goes_read_only():
    _seed()
    path = tasks_file("local")
    broken = path.read_text().replace('priority = "low"', 'priority = low')
    path.write_text(broken)
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        banner = str(app.query_one("#banner").render())
        line = broken.splitlines().index("priority = low") + 1
        assert f"tasks.toml:{line}:" in banner and "read-only" in banner
        for key in ("a", "space", "plus", "J", "d", "y", "e"):
            await pilot.press(key)
        await pilot.pause()
        assert path.read_text() == broken
        assert not app.query_one("#editor").has_class("shown")
        assert app.summaries[-1] == "✖ file"
        # fixed by hand: the board comes back and is editable again
        path.write_text(broken.replace("priority = low", 'priority = "low"'))
        for _ in range(20):
            await pilot.pause(0.1)
            if app.query_one(TasksPane).editable:
                break
        assert app.query_one(TasksPane).editable
        await pilot.press("space")
        await pilot.pause()
        assert _disk()[1].status == "completed"


async def test_readonly_console_makes_no_edits():
    _seed()
    before = tasks_file("local").read_text()
    app = TasksApp(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        pane = app.query_one(TasksPane)
        assert pane.readonly and not pane.editable
        for key in ("a", "x", "enter", "e", "space", "plus", "minus", "J", "K", "d", "u", "y", "n"):
            await pilot.press(key)
        await pilot.pause()
        assert tasks_file("local").read_text() == before
        await pilot.press("h")  # viewing keys still work
        await pilot.pause()
        assert pane.hide_done


async def test_in_the_real_app_tab_title_and_keys():
    from textual.widgets import TabbedContent

    from screens.app import GpudeckApp

    _seed()
    app = GpudeckApp(profile_name="local")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("5")
        await pilot.pause()
        tab = app.query_one(TabbedContent).get_tab("tasks")
        assert str(tab.label) == "5 Tasks 1▶ 3●"
        await pilot.press("a", *"from the app", "enter")
        await pilot.pause()
        assert "from the app" in [t.text for t in _disk().values()]
        assert str(tab.label) == "5 Tasks 1▶ 4●"
