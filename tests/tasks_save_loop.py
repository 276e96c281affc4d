"""Saves a big board over and over, printing the round before each save,
so that the kill -9 test can kill it in the middle of one.

Run as `python tests/tasks_save_loop.py` with GPUDECK_HOME set; the board
must already hold the tasks (every text is rewritten to `round N` each save).
"""
from __future__ import annotations

import sys

from console.store.task_board import TaskBoard


def main() -> int:
    board = TaskBoard.for_profile("local")
    ids = [t.id for t in board.tasks]
    round_no = 0
    while True:
        round_no += 1
        sys.stdout.write(f"saving {round_no}\n")
        sys.stdout.flush()

        def rewrite(state, n=round_no):
            from dataclasses import replace

            for tid in ids:
                state.tasks[tid] = replace(state.tasks[tid], text=f"round {n}")

        board._commit(rewrite)


if __name__ == "__main__":
    raise SystemExit(main())
