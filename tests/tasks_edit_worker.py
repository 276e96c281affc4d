"""A console stand-in for the concurrency test: random edits on one board.

Run as `python tests/tasks_edit_worker.py ROLE SEED COUNT GO_FILE OUT_FILE`
with GPUDECK_HOME set. Once it has read the board it creates GO_FILE.ROLE.ready, then
waits for GO_FILE (so both workers start together),
makes COUNT random edits, and writes what it expects the board to hold for
the tasks it owns (and the shared fields it owns) to OUT_FILE as JSON.
Role A owns the text and notes of the shared tasks, role B their priority
and status: both edit the same tasks, never the same field.
"""
from __future__ import annotations

import json
import random
import sys
import time
from pathlib import Path

from console.store.task_board import TaskBoard
from profiles.task_model import PRIORITIES, STATUSES

PROFILE = "local"


def main() -> int:
    role, seed, count, go_file, out_file = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4], sys.argv[5]
    rng = random.Random(seed)
    board = TaskBoard.for_profile(PROFILE)
    shared_ids = [t.id for t in board.tasks]
    Path(f"{go_file}.{role}.ready").touch()
    while not Path(go_file).exists():
        time.sleep(0.005)
    own: dict[int, dict] = {}
    deleted: list[int] = []
    shared: dict[int, dict] = {tid: {} for tid in shared_ids}
    foreign_changes_seen = 0
    conflicts: list[str] = []
    for i in range(count):
        if rng.random() < 0.3 and board.poll():
            foreign_changes_seen += 1
        op = rng.choice(["add", "add", "text", "priority", "status", "notes", "delete", "shared", "shared"])
        if op != "add" and op != "shared" and not own:
            op = "add"
        if op == "add":
            task = board.add(f"{role} task {i}", priority=rng.choice(PRIORITIES))
            own[task.id] = {"text": task.text, "priority": task.priority, "status": task.status, "notes": None}
        elif op == "delete":
            tid = rng.choice(sorted(own))
            board.remove(tid)
            own.pop(tid)
            deleted.append(tid)
        elif op == "shared":
            tid = rng.choice(shared_ids)
            if role == "A":
                change = {"text": f"A edit {i}"} if rng.random() < 0.5 else {"notes": f"A note {i}"}
            else:
                change = ({"priority": rng.choice(PRIORITIES)} if rng.random() < 0.5
                          else {"status": rng.choice(STATUSES)})
            board.edit(tid, **change)
            shared[tid].update(change)
        else:
            tid = rng.choice(sorted(own))
            value = {"text": f"{role} text {i}", "notes": f"{role} note {i}",
                     "priority": rng.choice(PRIORITIES), "status": rng.choice(STATUSES)}[op]
            board.edit(tid, **{op: value})
            own[tid][op] = value
        conflicts.extend(board.conflicts)
    Path(out_file).write_text(json.dumps({
        "own": own, "deleted": deleted, "shared": shared,
        "foreign_changes_seen": foreign_changes_seen, "foreign_merges": board.foreign_merges, "conflicts": conflicts}))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
