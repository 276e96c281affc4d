"""How long one board edit takes (lock, re-read, merge, atomic write with fsync),
and how long a poll that finds nothing takes, for boards of a few sizes.

Run: GPUDECK_HOME=$(mktemp -d) .venv/bin/python tests/bench/tasks_save_speed.py
Prints figures; asserts nothing.
"""
from __future__ import annotations

import os
import statistics
import tempfile
import time


def main() -> None:
    os.environ.setdefault("GPUDECK_HOME", tempfile.mkdtemp(prefix="gpudeck-bench-"))
    from console.store.task_board import TaskBoard

    for size in (10, 100, 1000):
        board = TaskBoard.for_profile(f"bench{size}")
        for i in range(size):
            board.add(f"task {i}")
        edits, polls = [], []
        for i in range(50):
            start = time.perf_counter()
            board.edit(1, text=f"edit {i}")
            edits.append(time.perf_counter() - start)
            start = time.perf_counter()
            board.poll()
            polls.append(time.perf_counter() - start)
        print(f"{size:>5} tasks: edit median {statistics.median(edits) * 1e3:6.1f} ms, "
              f"max {max(edits) * 1e3:6.1f} ms; idle poll median {statistics.median(polls) * 1e6:5.0f} µs")


if __name__ == "__main__":
    main()
