"""Repeat until sure: a cell's visits go on until its answer is as precise as asked, or its budget is spent.

A fixed number of repeats is too many where the spread is 1% and too few where
it is 40%. With `[policy] precision = 0.05` a cell is visited again until the
95% interval of output tok/s at its deciding level (the level the answer rests
on: the best within the SLOs, else the best) is within ±5% of its mean, or it
has had `max_repeats` visits; `[sweep] repeats` is then the least it gets.
Which of the two ended it is kept with its last repeat (`ended_by`) and shown.
Without `precision`, `repeats` is the count, as before.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..store.campaigns import Cell
from .spec import CampaignSpec

SURE, BUDGET, FIXED = "precision", "max_repeats", "repeats"


@dataclass(frozen=True)
class Verdict:
    done: bool
    ended_by: str | None = None      # SURE, BUDGET or FIXED once done
    text: str = ""                   # what ended it, in words


def most_rounds(spec: CampaignSpec) -> int:
    """The rounds a campaign may take: max_repeats when repeating until sure, else repeats."""
    if spec.policy.precision is not None and spec.policy.max_repeats:
        return max(spec.policy.max_repeats, spec.sweep.repeats)
    return spec.sweep.repeats


def relative_halfwidth(cell: Cell, slo: dict) -> tuple[int | None, float | None]:
    """The deciding level and its throughput interval's half-width over the mean (None: no interval yet)."""
    from .compare import result_of

    result = result_of(cell, slo, detail=False)
    level = result.deciding_level if result.deciding_level is not None else result.best_level
    if level is None or level not in result.stats:
        return level, None
    est = result.stats[level].estimates["tps"]
    if est.mean is None or est.mean <= 0 or est.lo is None or est.hi is None:
        return level, None
    return level, max(est.mean - est.lo, est.hi - est.mean) / est.mean


def after_visit(cell: Cell, spec: CampaignSpec) -> Verdict:
    """Whether the cell's repeats are over after the visit it just finished, and why."""
    n, policy = len(cell.rounds), spec.policy
    if policy.precision is None:
        return Verdict(n >= spec.sweep.repeats, FIXED if n >= spec.sweep.repeats else None,
                       f"{n} repeats, as set" if n >= spec.sweep.repeats else "")
    if n < spec.sweep.repeats:
        return Verdict(False)
    level, width = relative_halfwidth(cell, spec.sweep.slo)
    at = f" at c={level}" if level is not None else ""
    if width is not None and width <= policy.precision:
        return Verdict(True, SURE, f"sure after {n} repeats: CI ±{width * 100:.1f}%{at} "
                                   f"within ±{policy.precision * 100:g}%")
    if n >= most_rounds(spec):
        still = f"CI still ±{width * 100:.1f}%{at}" if width is not None else "no interval yet"
        return Verdict(True, BUDGET, f"max_repeats ({n}) spent: {still}, wider than ±{policy.precision * 100:g}%")
    return Verdict(False)
