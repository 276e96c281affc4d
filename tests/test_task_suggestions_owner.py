"""The task board's crash suggestions follow the launch's owner (`launch_state.read`), not the crash
file nor the record's raw fields: the owner's class names the task, and a launch the owner reads as
no crash (a stop another process asked for) offers none."""
from __future__ import annotations

import ast
import json
from pathlib import Path

from console.servers import launch_state
from console.store import launches
from console.store.crashes import crashes_dir, read_crashes
from console.store.launches import LaunchRecord
from console.store.suggest import offer_crash, offer_new, suggest_from_crash
from console.store.task_board import TaskBoard

PROFILE = "local"
ROOT = Path(__file__).resolve().parents[1]


def _crash_file(crash_id: str, launch: str | None, cls: str, config: str = "tp8-ep8") -> dict:
    """A crash record as an older gpudeck wrote it at the launch's end."""
    doc = {"id": crash_id, "config": config, "launch": launch, "class": cls, "time": "2026-12-07T14:02:11",
           "line": 12, "summary": "exit 1", "excerpt": [], "exit_status": 1}
    folder = crashes_dir(PROFILE)
    folder.mkdir(parents=True, exist_ok=True)
    (folder / f"{crash_id}.json").write_text(json.dumps(doc))
    return doc


def _launch(record_id: str, **raw) -> LaunchRecord:
    record = LaunchRecord(id=record_id, config="tp8-ep8", script=None, log=None, exit_file=None, **raw)
    launches.save(PROFILE, record)
    return record


def test_a_launch_the_owner_reads_crashed_is_offered_with_the_owners_class(gpudeck_home):
    # the old way: the record's state says stopped (written before its owner took the crash in),
    # the crash file says exit-nonzero; the owner reads crashed, engine-dead
    record = _launch("tp8-ep8-1", state="stopped", exit_status=0, crash_class="engine-dead",
                     crash_record="tp8-ep8-1")
    _crash_file("tp8-ep8-1", record.id, "exit-nonzero")
    assert launch_state.read(record) == launch_state.Reading("crashed", "engine-dead")
    offered = offer_new(PROFILE)
    assert [s.text for s in offered] == ["Investigate engine-dead in tp8-ep8 (14:02)"]
    assert offered[0].key == "crash:tp8-ep8-1"


def test_a_crash_file_of_a_launch_the_owner_reads_stopped_offers_nothing(gpudeck_home):
    # the crash file was written, then a stop another process had asked for was seen: a stop
    _launch("tp8-ep8-2", state="stopped", exit_status=143, kill_requested=True)
    _crash_file("tp8-ep8-2", "tp8-ep8-2", "exit-signal")
    assert offer_new(PROFILE) == []
    assert offer_crash(PROFILE, read_crashes(PROFILE).records[0]) is None
    assert suggest_from_crash(PROFILE, _crash_file("tp8-ep8-2", "tp8-ep8-2", "exit-signal"),
                              record="tp8-ep8-2") is None
    assert TaskBoard.for_profile(PROFILE).suggestions == []


def test_a_crash_with_no_launch_record_is_offered_as_its_file_says(gpudeck_home):
    _crash_file("by-hand", None, "segfault", config="triaged-log")
    assert [s.text for s in offer_new(PROFILE)] == ["Investigate segfault in triaged-log (14:02)"]


def test_the_board_reads_crashes_only_through_the_owner():
    """No crash suggestion is built from a crash file without the owner's reading beside it."""
    tree = ast.parse((ROOT / "console" / "store" / "suggest.py").read_text())
    builders = {n.name: n for n in tree.body if isinstance(n, ast.FunctionDef)}
    calls = {name: {c.func.id for c in ast.walk(fn) if isinstance(c, ast.Call) and isinstance(c.func, ast.Name)}
             for name, fn in builders.items()}
    for name, called in calls.items():
        if "crash_suggestion" in called:
            assert "_as_owner_reads" in called, f"{name} builds a crash suggestion the owner has not read"
    reader = ast.unparse(builders["_as_owner_reads"])
    assert "launch_state.read(" in reader
