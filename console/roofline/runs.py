"""Measured benchmark runs of a profile, read defensively from `<profile data>/runs/*.json`.

A run file has top-level `levels[]`, each with `concurrency`, `output_throughput`,
`status` and (for calibration) `tpot_ms.median`. A missing folder means no measurement; a file that does not
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
    tpot_s: float | None = None   # median time per output token of the level's requests


@dataclass
class MeasuredRun:
    path: Path
    name: str
    mtime: float
    levels: list[MeasuredLevel] = field(default_factory=list)

    def tpot_points(self) -> list[tuple[int, float]]:
        """(concurrency, TPOT seconds) of every level that finished, for calibration."""
        return [(lv.concurrency, lv.tpot_s) for lv in self.levels if lv.tok_s is not None and lv.tpot_s]

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


def load_one_run(path: Path) -> MeasuredRun:
    """One saved run by path; ValueError (or StateFileError) says why it cannot be read."""
    from ..bench.results import load_run

    return _run_from(load_run(path), Path(path))


def load_runs(runs_dir: Path) -> RunsFound:
    """Through the store's one run reader; the level rule for efficiency is LevelResult.measured_tok_s."""
    from ..store.runs import read_runs

    scan = read_runs(folder=runs_dir)
    found = RunsFound([], [(u.path, u.reason.splitlines()[0][:120]) for u in scan.unreadable])
    found.unreadable.sort(key=lambda item: item[0].name)
    for run in scan.records:
        levels = [MeasuredLevel(lv.concurrency, lv.measured_tok_s, lv.status.value,
                                _tpot_s(lv.raw, lv.measured_tok_s is not None))
                  for lv in run.levels if lv.concurrency is not None]
        found.runs.append(MeasuredRun(path=run.path, name=run.id, mtime=run.mtime, levels=levels))
    found.runs.sort(key=lambda r: (r.mtime, r.name))
    return found


def _tpot_s(raw: dict, measured: bool) -> float | None:
    """The level's median TPOT in seconds, for calibration; None unless the level measured."""
    tpot = raw.get("tpot_ms")
    tpot = tpot.get("median") if isinstance(tpot, dict) else None
    ok = isinstance(tpot, (int, float)) and not isinstance(tpot, bool) and tpot > 0
    return float(tpot) / 1e3 if measured and ok else None


def _run_from(doc: Any, path: Path) -> MeasuredRun:
    if not isinstance(doc, dict) or not isinstance(doc.get("levels"), list):
        raise ValueError("no 'levels' list")
    levels = []
    for raw in doc["levels"]:
        if not isinstance(raw, dict):
            continue
        conc = raw.get("concurrency")
        if isinstance(conc, bool) or not isinstance(conc, int) or conc < 1:
            continue
        status = str(raw.get("status") or "unknown")
        tok = raw.get("output_throughput")
        ok = isinstance(tok, (int, float)) and not isinstance(tok, bool) and tok > 0 and status in ("ok", "done", "unknown")
        tpot = raw.get("tpot_ms")
        tpot = tpot.get("median") if isinstance(tpot, dict) else None
        tpot_ok = isinstance(tpot, (int, float)) and not isinstance(tpot, bool) and tpot > 0
        levels.append(MeasuredLevel(conc, float(tok) if ok else None, status, float(tpot) / 1e3 if ok and tpot_ok else None))
    name = str(doc.get("name") or doc.get("id") or path.stem)
    return MeasuredRun(path=path, name=name, mtime=path.stat().st_mtime, levels=levels)
