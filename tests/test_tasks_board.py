"""The task board as data: edits, order, merge, suggestions, bad files, watching."""
from __future__ import annotations

import json

import pytest

from console.store.suggest import suggest_from_crash, suggest_from_efficiency, suggest_from_run
from console.store.task_board import TaskBoard
from console.store.tasks import FileWatch, read_board, tasks_file
from profiles.paths import profile_data_dir
from profiles.tasks import BoardReadOnly, counts_summary

CRASH = {"config": "tp8-ep8-memsafe", "class": "cuda-illegal-address", "time": "2026-11-29T14:02:11",
         "line": 812, "summary": "CUDA error: an illegal memory access was encountered",
         "excerpt": ["RuntimeError: CUDA error: an illegal memory access was encountered"],
         "exit_status": 1}


def test_edits_are_saved_at_once_and_read_back():
    board = TaskBoard.for_profile("local")
    a = board.add("Complete theoretical max analysis", priority="high")
    board.edit(a.id, status="in_progress", notes="start from the roofline")
    again = TaskBoard.for_profile("local")
    task = again.get(a.id)
    assert (task.text, task.priority, task.status, task.notes) == (
        "Complete theoretical max analysis", "high", "in_progress", "start from the roofline")
    assert task.created <= task.updated


def test_board_order_groups_and_priorities():
    board = TaskBoard.for_profile("local")
    low = board.add("update findings", priority="low")
    high = board.add("rerun 256/512", priority="high")
    med = board.add("try another MoE backend", priority="medium")
    doing = board.add("theoretical max", priority="low")
    done = board.add("old thing", priority="high")
    board.edit(doing.id, status="in_progress")
    board.edit(done.id, status="completed")
    assert [t.id for t in board.tasks] == [doing.id, high.id, med.id, low.id, done.id]
    assert board.summary() == "1▶ 3●"
    assert counts_summary([]) == "empty"


def test_cycle_priority_move_remove_restore():
    board = TaskBoard.for_profile("local")
    a = board.add("a", priority="high")
    b = board.add("b", priority="high")
    assert [s for s in ("pending",)] == [board.get(a.id).status]
    for expected in ("in_progress", "completed", "cancelled", "pending"):
        assert board.cycle_status(a.id).status == expected
    assert board.shift_priority(b.id, -1).priority == "medium"
    assert board.shift_priority(b.id, +1).priority == "high"
    assert board.shift_priority(b.id, +1).priority == "high"  # stops at the top
    assert board.move(b.id, -1) is True
    assert [t.text for t in board.tasks] == ["b", "a"]
    assert board.move(b.id, -1) is False  # already first
    gone = board.remove(a.id)
    assert [t.text for t in TaskBoard.for_profile("local").tasks] == ["b"]
    board.restore(gone)
    assert {t.id for t in TaskBoard.for_profile("local").tasks} == {a.id, b.id}
    c = board.add("c")
    assert c.id == 3  # ids are never reused


def test_bad_values_are_refused():
    board = TaskBoard.for_profile("local")
    with pytest.raises(ValueError):
        board.add("   ")
    with pytest.raises(ValueError):
        board.add("x", priority="urgent")
    t = board.add("x")
    with pytest.raises(ValueError):
        board.edit(t.id, status="done")
    with pytest.raises(KeyError):
        board.edit(99, text="y")


def test_two_consoles_merge_fields_and_keep_both_wordings():
    one = TaskBoard.for_profile("local")
    two = TaskBoard.for_profile("local")
    t = one.add("check EP8 server")
    two.poll()
    one.edit(t.id, text="check EP8 server and rerun 256/512")
    two.edit(t.id, priority="high")  # two has not seen one's edit: a clean field merge
    assert two.conflicts == []
    merged = TaskBoard.for_profile("local").get(t.id)
    assert (merged.text, merged.priority) == ("check EP8 server and rerun 256/512", "high")

    one.poll()
    two.poll()
    one.edit(t.id, text="wording from one")
    two.edit(t.id, text="wording from two")
    assert len(two.conflicts) == 1 and "kept both" in two.conflicts[0]
    texts = sorted(x.text for x in TaskBoard.for_profile("local").tasks)
    assert texts == ["wording from one", "wording from two"]
    kept = [x for x in two.tasks if x.conflict_of == t.id]
    assert len(kept) == 1


def test_delete_in_one_console_and_edit_in_another_keeps_the_edit():
    one = TaskBoard.for_profile("local")
    t = one.add("flaky task")
    two = TaskBoard.for_profile("local")
    one.remove(t.id)
    two.edit(t.id, notes="still needed")
    assert two.conflicts and "deleted" in two.conflicts[0]
    assert TaskBoard.for_profile("local").get(t.id).notes == "still needed"


def test_corrupt_file_is_reported_with_line_and_never_overwritten():
    board = TaskBoard.for_profile("local")
    board.add("first")
    path = tasks_file("local")
    broken = path.read_text() + "\n[[tasks]]\nid = 2\ntext = \"unterminated\n"
    path.write_text(broken)
    line = broken.splitlines().index('text = "unterminated') + 1
    fresh = TaskBoard.for_profile("local")
    assert fresh.readonly and fresh.error is not None
    assert fresh.error.line == line and str(path) in str(fresh.error)
    with pytest.raises(BoardReadOnly):
        fresh.add("second")
    # A console that had a good copy finds the file broken at save time: it does not write.
    with pytest.raises(BoardReadOnly):
        board.add("third")
    assert board.readonly
    assert path.read_text() == broken


def test_a_bad_value_in_a_valid_toml_file_names_its_table_line():
    path = tasks_file("local")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('version = 1\n\n[[tasks]]\nid = 1\ntext = "ok"\n\n[[tasks]]\nid = 2\ntext = "x"\nstatus = "done"\n')
    board = TaskBoard.for_profile("local")
    assert board.readonly and board.error.line == 7 and "status 'done'" in str(board.error)


def test_watch_sees_another_consoles_edit():
    one = TaskBoard.for_profile("local")
    two = TaskBoard.for_profile("local")
    assert two.poll() is False
    one.add("from one")
    assert two.poll() is True
    assert [t.text for t in two.tasks] == ["from one"]
    assert two.poll() is False
    watch = FileWatch(tasks_file("local"))
    one.add("again")
    assert watch.changed() and not watch.changed()


def test_crash_suggestion_is_offered_once_and_accepted_linked():
    s = suggest_from_crash("local", CRASH, record="tp8-ep8-memsafe-20261129-140211.json")
    assert s.text == "Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)"
    assert suggest_from_crash("local", CRASH, record="tp8-ep8-memsafe-20261129-140211.json") is None
    board = TaskBoard.for_profile("local")
    assert board.tasks == []  # never added silently
    task = board.accept(s.key)
    assert task.crash == "tp8-ep8-memsafe-20261129-140211" and task.config == "tp8-ep8-memsafe"  # the bare record id
    assert task.priority == "high" and board.suggestions == []
    assert suggest_from_crash("local", CRASH, record="tp8-ep8-memsafe-20261129-140211.json") is None


def test_dismissed_suggestions_are_remembered():
    run = {"url": "http://x", "model": "m", "levels": [
        {"concurrency": 64, "status": "ok", "completed": 512, "failed": 0},
        {"concurrency": 256, "status": "failed", "completed": 13, "failed": 243},
        {"concurrency": 512, "status": "ok", "completed": 500, "failed": 12}]}
    offered = suggest_from_run("local", run, "sweep-1400")
    assert [s.key for s in offered] == ["sweep:sweep-1400:256", "sweep:sweep-1400:512"]
    assert "failed (13 done, 243 failed)" in offered[0].text and "partial" in offered[1].text
    board = TaskBoard.for_profile("local")
    board.dismiss("sweep:sweep-1400:256")
    assert suggest_from_run("local", run, "sweep-1400") == []
    assert "sweep:sweep-1400:256" in TaskBoard.for_profile("local").dismissed


def test_efficiency_threshold_is_the_operators():
    assert suggest_from_efficiency("local", "batch 1 of sweep-1400", 3.4) is not None  # default 10%
    board = TaskBoard.for_profile("local")
    board.set_threshold(2.0)
    assert suggest_from_efficiency("local", "batch 2 of sweep-1400", 3.4) is None
    board.set_threshold(None)
    assert suggest_from_efficiency("local", "batch 4 of sweep-1400", 0.1) is None
    assert TaskBoard.for_profile("local").threshold_pct is None


def test_scan_events_reads_crash_and_run_files_defensively():
    data = profile_data_dir("local")
    (data / "crashes").mkdir(parents=True)
    (data / "runs").mkdir(parents=True)
    (data / "crashes" / "c1.json").write_text(json.dumps(CRASH))
    (data / "crashes" / "broken.json").write_text("{not json")
    (data / "runs" / "r1.json").write_text(json.dumps({"levels": [{"concurrency": 2, "status": "failed"}]}))
    from console.store.suggest import offer_new

    offered = offer_new("local")
    assert sorted(s.kind for s in offered) == ["crash", "sweep"]
    assert [s.key for s in offered if s.kind == "crash"] == ["crash:c1"]  # the record's id, not its file name
    assert offer_new("local") == []
    assert len(read_board(tasks_file("local")).suggestions) == 2
