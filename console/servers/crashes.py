"""Crash records: what died, when, why, and what was running at the time."""
from __future__ import annotations

import json
import time
from pathlib import Path

from profiles import paths
from profiles.atomic import write_atomic

from .records import LaunchRecord


def crashes_dir(profile_name: str) -> Path:
    return paths.profile_data_dir(profile_name) / "crashes"


def write(profile_name: str, record: LaunchRecord, verdict, sweep: str | None = None) -> dict:
    """Save one crash record; returns it (its `id` names the file)."""
    when = record.stopped_at or time.time()
    doc = {
        "id": f"{time.strftime('%Y%m%d-%H%M%S', time.localtime(when))}-{record.id}",
        "config": record.config,
        "launch": record.id,
        "flags": record.flags,
        "time": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(when)),
        "started_at": time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(record.started_at)),
        "exit_status": record.exit_status,
        "class": verdict.cls,
        "line": verdict.line,
        "summary": verdict.summary,
        "excerpt": list(verdict.excerpt),
        "server": verdict.server,
        "log": record.log,
        "sweep": sweep,
    }
    write_atomic(crashes_dir(profile_name) / f"{doc['id']}.json", json.dumps(doc, indent=2) + "\n")
    return doc


def load_all(profile_name: str) -> list[dict]:
    """Every readable crash record, newest first."""
    folder = crashes_dir(profile_name)
    out = []
    if folder.is_dir():
        for path in folder.glob("*.json"):
            try:
                doc = json.loads(path.read_text())
            except (OSError, ValueError):
                continue
            if isinstance(doc, dict):
                out.append(doc)
    out.sort(key=lambda d: d.get("time", ""), reverse=True)
    return out
