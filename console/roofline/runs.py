"""Measured benchmark runs of a profile, read defensively from `<profile data>/runs/*.json`.

A run file has top-level `levels[]`, each with `concurrency`, `output_throughput`
and `status`. A missing folder means no measurement; a file that does not
parse is listed as unreadable, never turned into zeros.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


@dataclass(frozen=True)
class MeasuredLevel:
    concurrency: int
    tok_s: float | None   # None when the level failed or reported nothing
    status: str


@dataclass
class MeasuredRun:
    path: Path
    name: str
    mtime: float
    levels: list[MeasuredLevel] = field(default_factory=list)

    def tok_s_at(self, concurrency: int) -> float | None:
        for lv in self.levels:
            if lv.concurrency == concurrency and lv.tok_s is not None:
                return lv.tok_s
        return None


@dataclass
class RunsFound:
    runs: list[MeasuredRun]          # oldest first
    unreadable: list[tuple[Path, str]]

    @property
    def latest(self) -> MeasuredRun | None:
        """The newest run that measured something (a failed sweep does not hide an earlier one)."""
        measured = [r for r in self.runs if any(lv.tok_s is not None for lv in r.levels)]
        return measured[-1] if measured else (self.runs[-1] if self.runs else None)


def load_runs(runs_dir: Path) -> RunsFound:
    """Through the store's one run reader; the level rule for efficiency is LevelResult.measured_tok_s."""
    from ..store.runs import read_runs

    scan = read_runs(folder=runs_dir)
    found = RunsFound([], [(u.path, u.reason.splitlines()[0][:120]) for u in scan.unreadable])
    found.unreadable.sort(key=lambda item: item[0].name)
    for run in scan.records:
        levels = [MeasuredLevel(lv.concurrency, lv.measured_tok_s, lv.status.value)
                  for lv in run.levels if lv.concurrency is not None]
        found.runs.append(MeasuredRun(path=run.path, name=run.id, mtime=run.mtime, levels=levels))
    found.runs.sort(key=lambda r: (r.mtime, r.name))
    return found
