"""One change watcher per profile: which saved records appeared or changed since the last look.

It compares names and modification times only (a few `stat` calls a second),
and reads a crash record through the store when a new one appears. Saves by
this console, another console and the CLI are all seen the same way.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from profiles import paths

from ..store.crashes import CrashRecord, read_crashes


@dataclass
class Changes:
    runs: list[str] = field(default_factory=list)            # run ids saved or rewritten
    crashes: list[CrashRecord] = field(default_factory=list)  # crash records that are new
    launches: bool = False                                    # a launch record appeared or changed
    tasks: bool = False                                       # tasks.toml changed
    campaigns: bool = False                                   # a campaign's saved state changed


def _signature(folder: Path) -> dict[str, int]:
    try:
        return {p.name: p.stat().st_mtime_ns for p in folder.glob("*.json")}
    except OSError:
        return {}


def _mtime(path: Path) -> int | None:
    try:
        return path.stat().st_mtime_ns
    except OSError:
        return None


class StoreWatch:
    def __init__(self, profile: str):
        self.profile = profile
        self.data = paths.profile_data_dir(profile)
        self._seen: dict[str, dict[str, int]] | None = None
        self._tasks: int | None = None
        self._campaigns: dict[str, int] | None = None

    def changes(self) -> Changes:
        now = {name: _signature(self.data / name) for name in ("runs", "crashes", "servers")}
        tasks = _mtime(self.data / "tasks.toml")
        try:
            campaigns = {p.parent.name: p.stat().st_mtime_ns for p in (self.data / "campaigns").glob("*/state.json")}
        except OSError:
            campaigns = {}
        out = Changes()
        if self._seen is not None:
            before = self._seen
            out.runs = sorted(n[:-5] for n, t in now["runs"].items() if before["runs"].get(n) != t)
            new_crashes = {n[:-5] for n in now["crashes"] if n not in before["crashes"]}
            if new_crashes:
                out.crashes = [c for c in read_crashes(self.profile).records if c.id in new_crashes
                               or any(n == c.id for n in new_crashes)]
            out.launches = now["servers"] != before["servers"]
            out.tasks = tasks != self._tasks
            out.campaigns = campaigns != self._campaigns
        self._seen, self._tasks, self._campaigns = now, tasks, campaigns
        return out
