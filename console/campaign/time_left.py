"""How long a running campaign has left, estimated from the visits it has measured, with a range.

A campaign's time goes to visits: launch a cell's server, wait until it is
ready, sweep its levels, stop it, wait for the GPUs to be idle, take the next.
A cell visited before is expected to take as long as its own visits did (its
levels run at its own speed: a config that falls back to eager steps sweeps
slower); a cell not yet visited, as long as the visits so far took on
average. Every cell still to finish owes its repeats left; the visit in
progress owes what its expected length has not yet used; the gap between one
visit's end and the next one's launch (the GPU idle check) is measured too.
The work is shared by the campaign's lanes (Slurm jobs or hosts at once).

The range is a 95% one: the spread of one cell's visits around their mean
(each visit left varies by that much, and the mean itself is known only
from the visits taken) and, for a cell not yet visited, the spread between
the cells' means. A shared host drifts: the latest visits against their
cells' means give the pace the visits left are expected to run at. Before any visit has ended there is nothing to estimate
from: None, shown as unknown, never a guess.
"""
from __future__ import annotations

import math
import statistics
from dataclasses import dataclass
from typing import Any

from ..fmt import duration
from ..store.campaigns import FINISHED, IN_PROGRESS, CampaignState, Cell

Z95 = 1.96
PACE_HALF_LIFE = 3.0    # visits: how quickly the estimate follows a host that became slower or faster


@dataclass(frozen=True)
class TimeLeft:
    seconds: float       # the estimate
    low: float           # the 95% range around it
    high: float
    visits_left: int     # visits still to run (the one in progress counted)
    measured: int        # visits the estimate is made from

    def text(self) -> str:
        """`~4m10s left (3m40s–4m40s, from 6 visits)`."""
        return (f"~{duration(self.seconds)} left ({duration(self.low)}–{duration(self.high)}, "
                f"from {self.measured} visit{'s' if self.measured != 1 else ''})")

    def to_json(self) -> dict[str, Any]:
        return {"seconds": round(self.seconds, 1), "low": round(self.low, 1), "high": round(self.high, 1),
                "visits_left": self.visits_left, "measured": self.measured}


@dataclass(frozen=True)
class _Visit:
    cell: str
    started_at: float
    ended_at: float
    counts: bool          # a whole visit (a repeat); a crashed or failed one only fills the timeline


def ended_without_a_round(cell: Cell) -> int:
    """1 when the cell's last visit ended it without adding a repeat (a crash, a failed start), or
    when it is a record from before repeats were kept (done, its levels its one run); else 0."""
    if cell.status in ("crashed", "start-failed"):
        return 1
    return 1 if cell.status == "done" and not cell.rounds and cell.levels else 0


def _visits(state: CampaignState) -> list[_Visit]:
    """Every visit that has ended: each cell's repeats, and the attempt that ended a cell without one."""
    found = []
    for cell in state.cells:
        for rnd in cell.rounds:
            start, end = rnd.get("started_at"), rnd.get("ended_at")
            if isinstance(start, (int, float)) and isinstance(end, (int, float)) and end >= start:
                found.append(_Visit(cell.name, float(start), float(end), True))
        if ended_without_a_round(cell) and cell.started_at and cell.ended_at and cell.ended_at >= cell.started_at:
            found.append(_Visit(cell.name, cell.started_at, cell.ended_at, cell.status == "done"))
    return sorted(found, key=lambda v: v.started_at)


def _gap(visits: list[_Visit], lanes: int) -> float:
    """The mean time from one visit's end to the next one's launch (one lane: the GPU idle check,
    the log); with several lanes the visits overlap and no gap is read."""
    if lanes > 1:
        return 0.0
    gaps = [b.started_at - a.ended_at for a, b in zip(visits, visits[1:]) if b.started_at >= a.ended_at]
    return statistics.fmean(gaps) if gaps else 0.0


def _pace(whole: list[_Visit], means: dict[str, float]) -> float:
    """How the latest visits ran against their own cells' means, the newest weighing most: a host
    that has become busier (or quieter) since the campaign began runs the visits left at its
    present pace, not at the campaign's average one."""
    ratios = [(v.ended_at - v.started_at) / means[v.cell] for v in whole if means[v.cell] > 0]
    if not ratios:
        return 1.0
    weights = [0.5 ** ((len(ratios) - 1 - i) / PACE_HALF_LIFE) for i in range(len(ratios))]
    return sum(w * r for w, r in zip(weights, ratios)) / sum(weights)


def visits_left(cell: Cell, repeats: int) -> int:
    """The visits a cell still owes: none once it has ended (done, crashed, pruned, skipped)."""
    if cell.status in FINISHED:
        return 0
    return max(0, repeats - len(cell.rounds))


def estimate(state: CampaignState, now: float, repeats: int, lanes: int = 1) -> TimeLeft | None:
    """The time the campaign's remaining visits take, from the visits measured; None before any."""
    visits = _visits(state)
    whole = [v for v in visits if v.counts]
    if not whole:
        return None
    lanes = max(1, lanes)
    gap = _gap(visits, lanes)
    by_cell: dict[str, list[float]] = {}
    for v in whole:
        by_cell.setdefault(v.cell, []).append(v.ended_at - v.started_at)
    means = {name: statistics.fmean(took) for name, took in by_cell.items()}
    overall = statistics.fmean(v.ended_at - v.started_at for v in whole)
    pace = _pace(whole, means)
    # a visit's spread around its cell's mean, pooled over cells visited more than once
    residuals = [t - means[name] for name, took in by_cell.items() if len(took) > 1 for t in took]
    free = sum(len(took) - 1 for took in by_cell.values() if len(took) > 1)
    spread = math.sqrt(sum(r * r for r in residuals) / free) if free else overall / 2
    between = statistics.stdev(means.values()) if len(means) > 1 else overall / 2

    work = variance = 0.0
    left_total = 0
    running_left = 0.0
    for cell in state.cells:
        left = visits_left(cell, repeats)
        if not left:
            continue
        left_total += left
        mean = means.get(cell.name, overall) * pace
        n = len(by_cell.get(cell.name, ()))
        owed = left * (mean + gap)
        if cell.status in IN_PROGRESS and cell.started_at:
            used = min(max(0.0, now - cell.started_at), mean)
            owed -= used
            running_left = max(running_left, mean - used)
        work += owed
        variance += left * spread ** 2 + (left ** 2) * (spread ** 2 / n if n else between ** 2)
    if not left_total:
        return TimeLeft(0.0, 0.0, 0.0, 0, len(whole))
    seconds = max(work / lanes, running_left)
    half = Z95 * math.sqrt(variance) / lanes
    return TimeLeft(seconds, max(0.0, seconds - half), seconds + half, left_total, len(whole))
