"""What the Tasks tab looks like: the board, grouped, with a suggestion waiting."""
from __future__ import annotations

from console.store.tasks import tasks_file
from tests.tasks_pane_app import TasksApp

BOARD = '''version = 1
next_id = 7
efficiency_threshold_pct = 10.0
dismissed = []

[[tasks]]
id = 1
text = "Complete theoretical max single-stream perf analysis"
status = "in_progress"
priority = "high"
order = 1.0
created = "2026-11-29T13:00:00.000000+00:00"
updated = "2026-11-29T13:05:00.000000+00:00"
notes = "10.36 of 309 tok/s so far"

[[tasks]]
id = 2
text = "Check EP8 server status and rerun 256/512 benchmarks"
status = "pending"
priority = "high"
order = 2.0
created = "2026-11-29T13:01:00.000000+00:00"
updated = "2026-11-29T13:01:00.000000+00:00"
config = "tp8-ep8-memsafe"

[[tasks]]
id = 3
text = "Try flashinfer_cutedsl MoE backend"
status = "pending"
priority = "medium"
order = 3.0
created = "2026-11-29T13:02:00.000000+00:00"
updated = "2026-11-29T13:02:00.000000+00:00"

[[tasks]]
id = 4
text = "Update findings with all new results"
status = "pending"
priority = "low"
order = 4.0
created = "2026-11-29T13:03:00.000000+00:00"
updated = "2026-11-29T13:03:00.000000+00:00"

[[tasks]]
id = 5
text = "Measure TP8 baseline at concurrency 1"
status = "completed"
priority = "high"
order = 5.0
created = "2026-11-29T12:00:00.000000+00:00"
updated = "2026-11-29T12:30:00.000000+00:00"
run = "sweep-1200"

[[tasks]]
id = 6
text = "Try EP16"
status = "cancelled"
priority = "low"
order = 6.0
created = "2026-11-29T12:00:00.000000+00:00"
updated = "2026-11-29T12:10:00.000000+00:00"

[[suggestions]]
key = "crash:20261129-140211-l1.json"
text = "Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)"
kind = "crash"
priority = "high"
crash = "20261129-140211-l1.json"
config = "tp8-ep8-memsafe"
created = "2026-11-29T14:02:12.000000+00:00"
'''


def test_board_snapshot(snap_compare):
    path = tasks_file("local")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BOARD)
    assert snap_compare(TasksApp(), terminal_size=(140, 16))
