"""The task board's file through the store's contract: a `Scan` with the board, or one line naming it."""
from __future__ import annotations

import os

from console.store.task_board import TaskBoard
from console.store.tasks import read_tasks, tasks_file


def test_a_readable_board_is_one_record():
    TaskBoard.for_profile("local").add("rerun 256/512", priority="high")
    found = read_tasks("local")
    assert found.unreadable == []
    assert [t.text for t in found.records[0].tasks.values()] == ["rerun 256/512"]


def test_a_missing_board_is_an_empty_one():
    found = read_tasks("local")
    assert found.unreadable == [] and found.records[0].tasks == {}


def test_a_broken_board_is_one_line_naming_the_file_and_its_line():
    path = tasks_file("local")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('version = 1\n[[tasks]]\nid = 1\ntext = "x"\nstatus = "nonsense"\n')
    found = read_tasks("local")
    assert found.records == []
    (problem,) = found.unreadable
    assert problem.line.startswith(f"{path}: unreadable task board (line 2: ")
    assert "\n" not in problem.line


def test_a_fifo_in_place_of_the_board_is_refused_not_waited_on():
    # reading a FIFO with no writer would block for ever: the board turns read-only with one line
    path = tasks_file("local")
    path.parent.mkdir(parents=True, exist_ok=True)
    os.mkfifo(path)
    (problem,) = read_tasks("local").unreadable
    assert problem.reason == "not a regular file"
    board = TaskBoard.for_profile("local")
    assert board.readonly and "not a regular file" in str(board.error)


async def test_the_console_names_a_broken_board_with_the_other_unreadable_records(gpudeck_home):
    """The runtime's store scan (one toast per unreadable record) reads the board too."""
    from console.runtime import events as ev
    from console.runtime.host_runtime import HostRuntime
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict

    path = tasks_file("local")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text("version = 1\nnext_id = 0\n")
    store.save(profile_from_dict("local", {"transport": "local"}))
    runtime = HostRuntime(HostSession.open(store.load("local")))
    seen: list[ev.RuntimeEvent] = []
    runtime.subscribe(seen.append)
    await runtime._report_problems()
    lines = [line for e in seen if isinstance(e, ev.StoreProblems) for line in e.lines]
    assert lines == [f"{path}: unreadable task board ('next_id' must be a positive integer)"]
