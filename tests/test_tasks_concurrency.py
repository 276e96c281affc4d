"""Many writers on one board: real OS processes, real flock, real kill -9."""
from __future__ import annotations

import pytest
import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path

from console.store.task_board import TaskBoard
from console.store.tasks import read_board, tasks_file
from tests.harness import poll_until

ROOT = Path(__file__).resolve().parent.parent
EDITS = 200


def _spawn(script: str, *args: str) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, str(ROOT / "tests" / script), *args], cwd=ROOT,
                            env=os.environ.copy(), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def test_two_processes_200_random_edits_each_lose_nothing(tmp_path):
    board = TaskBoard.for_profile("local")
    for text in ("shared one", "shared two", "shared three"):
        board.add(text)
    go = tmp_path / "go"
    outs = {role: tmp_path / f"{role}.json" for role in "AB"}
    procs = {role: _spawn("tasks_edit_worker.py", role, str(seed), str(EDITS), str(go), str(outs[role]))
             for role, seed in (("A", 11), ("B", 22))}
    ready = [Path(f"{go}.{role}.ready") for role in procs]
    poll_until(lambda: all(r.exists() for r in ready) or any(p.poll() is not None for p in procs.values()),
               60, "both workers to read the board")
    assert all(p.poll() is None for p in procs.values()), {r: p.communicate() for r, p in procs.items()}
    go.write_text("go")
    for role, proc in procs.items():
        _, err = proc.communicate(timeout=300)
        assert proc.returncode == 0, f"worker {role} failed: {err}"
    results = {role: json.loads(path.read_text()) for role, path in outs.items()}

    final = read_board(tasks_file("local")).tasks
    ids_on_disk = list(final)
    assert len(ids_on_disk) == len(set(ids_on_disk))

    # The workers really ran at the same time: each saw the other's saves land.
    assert results["A"]["foreign_merges"] > 10
    assert results["B"]["foreign_merges"] > 10
    # Disjoint fields never clash.
    assert results["A"]["conflicts"] == [] and results["B"]["conflicts"] == []

    expected_ids = {1, 2, 3}
    for role, result in results.items():
        for tid_text, fields in result["own"].items():
            tid = int(tid_text)
            expected_ids.add(tid)
            assert tid in final, f"{role}'s task {tid} was lost"
            task = final[tid]
            for name, value in fields.items():
                assert getattr(task, name) == value, f"{role}'s task {tid}: {name}"
        for tid in result["deleted"]:
            assert tid not in final, f"{role}'s deleted task {tid} came back"
    # Nothing extra (no duplicates, no resurrected or phantom tasks).
    assert set(final) == expected_ids
    texts = [t.text for t in final.values()]
    assert len(texts) == len(set(texts))

    # Each shared task carries A's last text/notes and B's last priority/status.
    for role in "AB":
        for tid_text, fields in results[role]["shared"].items():
            for name, value in fields.items():
                assert getattr(final[int(tid_text)], name) == value, f"shared {tid_text}.{name} from {role}"


@pytest.mark.slow
def test_kill_9_during_save_leaves_old_or_new_file():
    board = TaskBoard.for_profile("local")
    for i in range(300):
        board.add(f"round 0 task {i}")
    path = tasks_file("local")
    for attempt in range(6):
        proc = _spawn("tasks_save_loop.py")
        rounds = 0
        while rounds < 3 + attempt * 2:
            line = proc.stdout.readline()
            assert line, proc.stderr.read()
            rounds = int(re.match(r"saving (\d+)", line).group(1))
        time.sleep(0.003 * attempt)
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        proc.stdout.close()
        proc.stderr.close()
        state = read_board(path)  # raises if the file were half written
        texts = {t.text for t in state.tasks.values()}
        assert len(state.tasks) == 300
        # One whole version: the seed board, or every task from one and the same save.
        seed = {f"round 0 task {i}" for i in range(300)}
        assert texts == seed or (len(texts) == 1 and re.fullmatch(r"round \d+", texts.pop()))
    # The lock held by the killed process is gone: a new console can save.
    again = TaskBoard.for_profile("local")
    again.add("after the kills")
    assert len(read_board(path).tasks) == 301
