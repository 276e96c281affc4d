"""Which measurements a roofline comparison reads: one whole run, the same for every view.

The rule: efficiency is read against one run, all of its levels, never a mix
of runs. That run is the one the operator picked (the Roofline tab's `p`),
else the newest run with a level that feeds efficiency
(`LevelResult.measured_tok_s`), so a failed sweep does not hide an earlier
one; with no measured run at all it is the newest run, whose levels then read
N/A. The Roofline tab, `gpudeck roofline --profile` and the report all take
their run here.

Why one run and not the latest measurement of each concurrency across runs:
runs differ in server flags, engine build and workload, so levels taken from
several of them draw a curve no server produced, and the calibration fit (one
run's TPOT per level) would not describe the efficiency printed beside it.
Within the run, a concurrency measured twice counts its first measured level,
as `RunDoc.tok_s_at` does.
"""
from __future__ import annotations

from typing import Any, Callable, Iterable, Sequence, TypeVar

from .runs import LevelResult


R = TypeVar("R")


def _own_measured(run: Any) -> bool:
    return bool(run.measured)


def compared_run(runs_newest_first: Sequence[R], chosen: Callable[[R], bool] | None = None,
                 measured: Callable[[R], bool] = _own_measured) -> R | None:
    """The one run a roofline comparison reads (see the module's rule); None when there is no run.
    `measured` says whether a run has a level that feeds efficiency (a RunDoc's own `measured`)."""
    if chosen is not None:
        picked = next((r for r in runs_newest_first if chosen(r)), None)
        if picked is not None:
            return picked
    found = next((r for r in runs_newest_first if measured(r)), None)
    if found is not None:
        return found
    return runs_newest_first[0] if runs_newest_first else None


def measured_levels(levels: Iterable[LevelResult]) -> dict[int, float]:
    """concurrency -> output tok/s of each level that feeds efficiency (the first of a concurrency wins)."""
    out: dict[int, float] = {}
    for level in levels:
        if level.concurrency is not None and level.measured_tok_s is not None:
            out.setdefault(level.concurrency, level.measured_tok_s)
    return out
