"""A cell's sweep cut short by the driver's death: its run document says "interrupted", not "running" forever.

The load generator rewrites its run document after every level and marks it
done at the end; killed with the driver, it never does. On resume the runner
marks the cell's last run interrupted (only while it still says running),
so `bench --list` and the report count it apart from the cell's redo.
"""
from __future__ import annotations

import json

from profiles.atomic import write_atomic

from ..bench.results import runs_dir

MAX_DOC = 16 << 20


def mark_interrupted(profile: str, run_id: str | None, why: str) -> bool:
    """True when the run's document said running and now says interrupted."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        return False
    path = runs_dir(profile) / f"{run_id}.json"
    try:
        if path.stat().st_size > MAX_DOC:
            return False
        doc = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False
    if not isinstance(doc, dict) or doc.get("status") != "running":
        return False
    doc["status"], doc["interrupted"] = "interrupted", why
    try:
        write_atomic(path, json.dumps(doc, indent=2, default=str) + "\n")
    except OSError:
        return False
    return True
