"""Crash records as plain documents, for older callers; the typed reader and the one
writer are in console.store.crashes."""
from __future__ import annotations

from pathlib import Path

from ..store import crashes as store
from .records import LaunchRecord


def crashes_dir(profile_name: str) -> Path:
    return store.crashes_dir(profile_name)


def write(profile_name: str, record: LaunchRecord, verdict, sweep: str | None = None) -> dict:
    """Save the launch's crash record once (a second writer gets the first one's); returns it."""
    return store.write_crash(profile_name, record, verdict, sweep).to_doc()


def load_all(profile_name: str) -> list[dict]:
    """Every readable crash record, newest first."""
    return [c.to_doc() for c in store.read_crashes(profile_name).records]
