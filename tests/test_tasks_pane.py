"""The Tasks pane under Pilot: every key, other consoles' edits, a broken file, read-only."""
from __future__ import annotations

import json

from profiles.paths import profile_data_dir
from console.store.task_board import TaskBoard
from console.store.tasks import tasks_file
from screens.tasks_pane import TasksPane
from tests.harness import wait_until
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


async def _opened(pilot, app) -> None:
    """The pane read the board off the UI thread, drew it and told the app its tab title."""
    pane = app.query_one(TasksPane)
    await wait_until(pilot, lambda: pane.board is not None and app.summaries, what="the board drawn")


async def _goto(pilot, app, text: str) -> None:
    table = app.query_one(TaskTable)
    pane = app.query_one(TasksPane)
    index = [pane.board.get(tid).text for tid in table.task_ids].index(text)
    wanted = table.task_ids[index]
    table.move_cursor(row=index)
    await wait_until(pilot, lambda: table.selected_id == wanted, what=f"the cursor on “{text}”")


def _summary(app) -> str:
    return app.summaries[-1] if app.summaries else ""


async def _edit_key(pilot, app, key: str, done, what: str) -> None:
    """Press a key whose edit is written off the UI thread, then wait until `done()` holds and
    the pane has redrawn after it (each redraw sends the app one more tab title)."""
    drawn = len(app.summaries)
    await pilot.press(key)
    await wait_until(pilot, lambda: len(app.summaries) > drawn and done(), what=what)


async def test_board_order_and_summary():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await wait_until(pilot, lambda: _summary(app) == "1▶ 3●", what="the summary 1▶ 3●")
        assert _texts(app) == ["Complete theoretical max single-stream perf analysis",
                               "Check EP8 server status and rerun 256/512 benchmarks",
                               "Try flashinfer_cutedsl MoE backend", "Update findings with all new results"]


async def test_a_adds_and_escape_cancels():
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        await pilot.press("a")
        await pilot.press(*"rerun 512")
        await pilot.press("enter")
        await wait_until(pilot, lambda: _summary(app) == "1●", what="the added task drawn")
        assert [t.text for t in _disk().values()] == ["rerun 512"]
        editor = app.query_one("#editor")
        await pilot.press("a", "x")
        await wait_until(pilot, lambda: editor.has_class("shown") and editor.value == "x", what="the editor holding x")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not editor.has_class("shown"), what="Esc closing the editor")
        assert len(_disk()) == 1
        assert _summary(app) == "1●"


async def test_e_and_enter_edit_the_selected_task():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        await _goto(pilot, app, "Try flashinfer_cutedsl MoE backend")
        pane = app.query_one(TasksPane)
        await pilot.press("e", "end", *" and trtllm", "enter")
        await wait_until(pilot, lambda: _disk()[3].text == "Try flashinfer_cutedsl MoE backend and trtllm"
                         and pane.board.get(3).text == _disk()[3].text
                         and app.query_one(TaskTable).selected_id == 3, what="the edit saved and drawn")
        await pilot.press("enter")  # Enter on the row opens the editor too
        editor = app.query_one("#editor")
        await wait_until(pilot, lambda: editor.has_class("shown"), what="Enter opening the editor")
        assert editor.value == _disk()[3].text
        await pilot.press("ctrl+u", *"Try another MoE backend", "enter")
        await wait_until(pilot, lambda: _disk()[3].text == "Try another MoE backend", what="the second edit saved")


async def test_space_cycles_status():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        await _goto(pilot, app, "Update findings with all new results")
        table = app.query_one(TaskTable)
        seen = []
        for _ in range(4):
            before = _disk()[4].status
            await _edit_key(pilot, app, "space", lambda: _disk()[4].status != before,
                            what="the status change saved and drawn")
            seen.append(_disk()[4].status)
        assert seen == ["in_progress", "completed", "cancelled", "pending"]
        # the cursor follows the task as it changes group
        assert table.selected_id == 4


async def test_plus_minus_change_priority():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        await _goto(pilot, app, "Update findings with all new results")
        table = app.query_one(TaskTable)
        await _edit_key(pilot, app, "plus", lambda: _disk()[4].priority == "medium", what="priority medium")
        await _edit_key(pilot, app, "plus", lambda: _disk()[4].priority == "high", what="priority high")
        await _edit_key(pilot, app, "plus", lambda: True, what="a third plus handled")
        assert _disk()[4].priority == "high"  # already the highest: it stays
        await _edit_key(pilot, app, "minus", lambda: _disk()[4].priority == "medium", what="priority back to medium")
        assert table.selected_id == 4


async def test_J_K_move_within_a_priority():
    board = TaskBoard.for_profile("local")
    for text in ("first", "second", "third"):
        board.add(text, priority="high")
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        await _goto(pilot, app, "first")
        table = app.query_one(TaskTable)

        def order(*texts: str):
            return lambda: _texts(app) == list(texts) and table.selected_id == 1

        await pilot.press("J")
        await wait_until(pilot, order("second", "first", "third"), what="first moved down")
        await pilot.press("J")
        await wait_until(pilot, order("second", "third", "first"), what="first moved to the bottom")
        await pilot.press("K")
        await wait_until(pilot, order("second", "first", "third"), what="first moved up")
        await pilot.press("K")
        await wait_until(pilot, order("first", "second", "third"), what="first back on top")
        assert [t.text for t in TaskBoard.for_profile("local").tasks] == ["first", "second", "third"]


async def test_d_deletes_and_u_undoes():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        await _goto(pilot, app, "Try flashinfer_cutedsl MoE backend")
        pane = app.query_one(TasksPane)
        table = app.query_one(TaskTable)
        await pilot.press("d")
        await wait_until(pilot, lambda: pane.undo_stack and 3 not in table.task_ids, what="the delete drawn")
        assert 3 not in _disk()
        await pilot.press("u")
        await wait_until(pilot, lambda: table.selected_id == 3, what="the undone task drawn under the cursor")
        assert _disk()[3].text == "Try flashinfer_cutedsl MoE backend"


async def test_slash_filters_and_escape_clears():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        await pilot.press("slash", *"moe", "enter")
        await wait_until(pilot, lambda: _texts(app) == ["Try flashinfer_cutedsl MoE backend"], what="the filtered rows")
        await pilot.press("slash", "escape")
        await wait_until(pilot, lambda: len(_texts(app)) == 4, what="every row back")


async def test_h_hides_and_shows_done_and_cancelled():
    board = _seed()
    board.edit(4, status="completed")
    board.edit(3, status="cancelled")
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        assert len(_texts(app)) == 4
        await pilot.press("h")
        await wait_until(pilot, lambda: _texts(app) == ["Complete theoretical max single-stream perf analysis",
                                                        "Check EP8 server status and rerun 256/512 benchmarks"],
                         what="only the open tasks")
        await pilot.press("h")
        await wait_until(pilot, lambda: len(_texts(app)) == 4, what="every task back")


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
        await _opened(pilot, app)
        await wait_until(pilot, lambda: _summary(app) == "empty ✚2", what="two suggestions offered")
        line = str(app.query_one("#suggestion").render())
        assert "Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)" in line
        assert _disk() == {}  # never added silently
        await pilot.press("y")
        await wait_until(pilot, lambda: _summary(app) == "1● ✚1", what="the accepted suggestion drawn")
        (task,) = _disk().values()
        assert task.text == "Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)"
        assert task.crash == "c1"  # the crash record's one id
        await pilot.press("n")
        await wait_until(pilot, lambda: _summary(app) == "1●", what="the dismissed suggestion gone")
        assert "sweep:sweep-1400:256" in TaskBoard.for_profile("local").dismissed
        assert str(app.query_one("#suggestion").render()).strip() == ""


async def test_r_writes_the_report():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        pane = app.query_one(TasksPane)
        await pilot.press("r")
        await wait_until(pilot, lambda: pane.last_report is not None, what="the report written")
        text = (profile_data_dir("local") / "findings.md").read_text()
        assert "## Task board" in text and "Check EP8 server status" in text
        assert pane.last_report == profile_data_dir("local") / "findings.md"


async def test_j_k_move_the_cursor():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        table = app.query_one(TaskTable)
        assert table.cursor_row == 0
        await pilot.press("j", "j")
        await wait_until(pilot, lambda: table.cursor_row == 2, what="the cursor on row 2")
        await pilot.press("k")
        await wait_until(pilot, lambda: table.cursor_row == 1, what="the cursor on row 1")


async def test_another_consoles_edit_shows_within_two_seconds():
    _seed()
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        TaskBoard.for_profile("local").add("added in another tmux pane", priority="high")
        # the store watcher polls the file; two seconds is the promise the test names
        await wait_until(pilot, lambda: "added in another tmux pane" in _texts(app), seconds=2.0,
                         what="the other console's task")
        await wait_until(pilot, lambda: _summary(app) == "1▶ 4●", what="the summary 1▶ 4●")


async def test_corrupt_file_shows_the_error_and_goes_read_only():
    _seed()
    path = tasks_file("local")
    broken = path.read_text().replace('priority = "low"', 'priority = low')
    path.write_text(broken)
    app = TasksApp()
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        banner = str(app.query_one("#banner").render())
        line = broken.splitlines().index("priority = low") + 1
        assert f"tasks.toml:{line}:" in banner and "read-only" in banner
        pane = app.query_one(TasksPane)
        for key in ("a", "space", "plus", "J", "d", "y", "e"):
            await pilot.press(key)
        # a key the read-only board still takes proves the ones before it were handled
        await pilot.press("h")
        await wait_until(pilot, lambda: pane.hide_done, what="h handled after the edit keys")
        assert path.read_text() == broken
        assert not app.query_one("#editor").has_class("shown")
        assert _summary(app) == "✖ file"
        await pilot.press("h")
        await wait_until(pilot, lambda: not pane.hide_done, what="h handled again")
        # fixed by hand: the board comes back and is editable again
        path.write_text(broken.replace("priority = low", 'priority = "low"'))
        await wait_until(pilot, lambda: pane.editable, what="the fixed board editable again")
        await wait_until(pilot, lambda: app.query_one(TaskTable).selected_id == 1, what="the cursor on task 1")
        await pilot.press("space")
        await wait_until(pilot, lambda: _disk()[1].status == "completed", what="task 1 completed")


async def test_readonly_console_makes_no_edits():
    _seed()
    before = tasks_file("local").read_text()
    app = TasksApp(readonly=True)
    async with app.run_test(size=SIZE) as pilot:
        await _opened(pilot, app)
        pane = app.query_one(TasksPane)
        assert pane.readonly and not pane.editable
        for key in ("a", "x", "enter", "e", "space", "plus", "minus", "J", "K", "d", "u", "y", "n"):
            await pilot.press(key)
        await pilot.press("h")  # viewing keys still work; once it is handled, so are the keys before it
        await wait_until(pilot, lambda: pane.hide_done, what="h hiding done tasks")
        assert tasks_file("local").read_text() == before
        assert not app.query_one("#editor").has_class("shown")


async def test_in_the_real_app_tab_title_and_keys():
    from textual.widgets import TabbedContent

    from screens.app import GpudeckApp

    _seed()
    app = GpudeckApp(profile_name="local")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        await pilot.press("5")
        tabs = app.query_one(TabbedContent)
        tab = tabs.get_tab("tasks")
        await wait_until(pilot, lambda: tabs.active == "tasks" and str(tab.label) == "5 Tasks 1▶ 3●",
                         what="the Tasks tab and its title")
        await wait_until(pilot, lambda: app.query_one(TasksPane).query_one(TaskTable).has_focus,
                         what="the task table focused")
        await pilot.press("a", *"from the app", "enter")
        await wait_until(pilot, lambda: str(tab.label) == "5 Tasks 1▶ 4●", what="the title counting the new task")
        assert "from the app" in [t.text for t in _disk().values()]
