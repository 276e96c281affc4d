"""Measured benchmark runs of a profile as the roofline reads them, through the store (`console.store.runs`).

A run file has top-level `levels[]`, each with `concurrency`, `output_throughput`,
`status` and (for calibration) `tpot_ms.median`. A missing folder means no measurement; a file that does not
parse is listed as unreadable, never turned into zeros.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from ..store.runs import PER_STEP_RUNNING


@dataclass(frozen=True)
class MeasuredLevel:
    concurrency: int
    tok_s: float | None   # None when the level failed or reported nothing
    status: str
    tpot_s: float | None = None   # median time per output token of the level's requests
    server_batch: float | None = None   # the requests the server ran at once over the level, by its own count


@dataclass
class MeasuredRun:
    path: Path
    name: str
    mtime: float
    levels: list[MeasuredLevel] = field(default_factory=list)
    summary: dict = field(default_factory=dict)   # the store's RunDoc.summary, what a run list shows

    def tpot_points(self) -> list[tuple[int, float, float | None]]:
        """(concurrency, TPOT seconds, the server's own batch or None) of every level that finished, for
        calibration (`calibrate.step_batch`)."""
        return [(lv.concurrency, lv.tpot_s, lv.server_batch) for lv in self.levels
                if lv.tok_s is not None and lv.tpot_s]

    @property
    def measured(self) -> bool:
        return any(lv.tok_s is not None for lv in self.levels)

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
        """The run efficiency is read against when none is picked: the store's one rule (store.measured)."""
        return self.compared()

    def compared(self, chosen_path: str | None = None) -> MeasuredRun | None:
        """The picked run while it is still on disk, else the store's rule (console.store.measured)."""
        from ..store.measured import compared_run

        pick = (lambda r: str(r.path) == chosen_path) if chosen_path else None
        return compared_run(list(reversed(self.runs)), pick)


def load_one_run(path: Path) -> MeasuredRun:
    """One saved run by path, through the store's one reader (StateFileError says why it cannot be read),
    so `roofline --run` counts the same levels as the Roofline tab and the report."""
    from ..store.runs import read_run

    return _measured(read_run(path))


def load_runs(runs_dir: Path) -> RunsFound:
    """Through the store's one run reader; the level rule for efficiency is LevelResult.measured_tok_s."""
    from ..store.runs import read_runs

    scan = read_runs(folder=runs_dir)
    found = RunsFound([], [(u.path, u.reason.splitlines()[0][:120]) for u in scan.unreadable])
    found.unreadable.sort(key=lambda item: item[0].name)
    # the store's order (newest first by start time) decides which run is the newest, as on the Bench tab
    found.runs = [_measured(run) for run in reversed(scan.records)]
    return found


def _measured(run) -> MeasuredRun:
    """A store RunDoc as the roofline reads it; the level rule for efficiency is LevelResult.measured_tok_s."""
    levels = [MeasuredLevel(lv.concurrency, lv.measured_tok_s, lv.status.value,
                            _tpot_s(lv.raw, lv.measured_tok_s is not None), _server_batch(lv.raw))
              for lv in run.levels if lv.concurrency is not None]
    return MeasuredRun(path=run.path, name=run.id, mtime=run.mtime, levels=levels, summary=run.summary())


def _server_batch(raw: dict) -> float | None:
    """The requests the server ran per step over the level, when the run recorded its own count of
    that (llama.cpp's busy slots per decode call: console/bench/prom.level_view). Not a mean of
    scrapes (the level's ramp and tail pull it under the batch of its steps), nor a record from
    before, which held the last scrape (2 at 64 streams)."""
    server = raw.get("server")
    if not isinstance(server, dict) or server.get("over") != "level" or server.get("running_is") != PER_STEP_RUNNING:
        return None
    running = server.get("running")
    ok = isinstance(running, (int, float)) and not isinstance(running, bool) and running > 0
    return float(running) if ok else None


def _tpot_s(raw: dict, measured: bool) -> float | None:
    """The level's median TPOT in seconds, for calibration; None unless the level measured."""
    tpot = raw.get("tpot_ms")
    tpot = tpot.get("median") if isinstance(tpot, dict) else None
    ok = isinstance(tpot, (int, float)) and not isinstance(tpot, bool) and tpot > 0
    return float(tpot) / 1e3 if measured and ok else None
