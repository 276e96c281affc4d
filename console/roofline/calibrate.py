"""Where the time goes: fit bandwidth efficiency and a fixed step overhead to a measured sweep.

Each level of a sweep gives a measured time per output token (TPOT) at a
batch B. The roofline gives the ideal step time x(B): the step's bytes over
the summed bandwidth (or its FLOPs over peak compute, when larger). A server
that reaches a fraction eta of that bandwidth and pays a fixed cost c per
step (kernel launches, scheduling, allreduce latency) takes

    TPOT(B) = x(B) / eta + c

so a least-squares line through (x, TPOT) gives 1/eta as its slope and c as
its intercept. Both must be physical (eta > 0, c >= 0); when the free fit is
not, the bound one is used (c = 0, or a flat line: overhead only).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable

from ..fmt import UNKNOWN
from .step_times import StepTimes


@dataclass(frozen=True)
class Calibration:
    eta: float | None          # fraction of the ideal bandwidth reached; None when the fit finds no slope
    overhead_s: float          # fixed seconds per decode step
    r2: float | None           # share of the TPOT variance the line explains; None with < 3 levels
    levels_used: tuple[int, ...]

    def step_s(self, roof: StepTimes, batch: int) -> float:
        x = roof.step_time_s(batch, "ideal")
        return (x / self.eta if self.eta else 0.0) + self.overhead_s

    def tok_s(self, roof: StepTimes, batch: int) -> float:
        """Predicted aggregate output tok/s at this batch."""
        return max(1, int(batch)) / self.step_s(roof, batch)

    def overhead_share(self, roof: StepTimes, batch: int = 1) -> float:
        return self.overhead_s / self.step_s(roof, batch)

    def to_json(self) -> dict[str, Any]:
        return {"eta": self.eta, "overhead_ms": self.overhead_s * 1e3, "r2": self.r2,
                "levels_used": list(self.levels_used)}


def fit(roof: StepTimes, points: Iterable[tuple[int, float]]) -> Calibration | None:
    """Fit (batch, measured TPOT seconds) pairs; None with fewer than two distinct batches."""
    pts = sorted({int(b): float(t) for b, t in points if b >= 1 and t and t > 0}.items())
    if len({b for b, _ in pts}) < 2:
        return None
    xs = [roof.step_time_s(b, "ideal") for b, _ in pts]
    ys = [t for _, t in pts]
    slope, intercept = _line(xs, ys)
    if slope <= 0:                       # TPOT does not grow with bytes: all of it is overhead
        slope, intercept = 0.0, sum(ys) / len(ys)
    elif intercept < 0:                  # no negative overhead: a line through the origin
        slope, intercept = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs), 0.0
    fitted = [slope * x + intercept for x in xs]
    return Calibration(eta=1.0 / slope if slope > 0 else None, overhead_s=intercept,
                       r2=_r2(ys, fitted) if len(pts) >= 3 else None, levels_used=tuple(b for b, _ in pts))


def dominant_term(roof: StepTimes, cal: Calibration, batch: int = 1) -> str:
    """One sentence: which term of the step the operator should look at first."""
    share = cal.overhead_share(roof, batch)
    step_ms = cal.step_s(roof, batch) * 1e3
    if share >= 0.5:
        return (f"per-step overhead is {share:.0%} of the {step_ms:.1f} ms step at batch {batch}: "
                "launches, scheduling or allreduce latency (CUDA graphs, the collective), not bandwidth")
    eta = f"{cal.eta:.0%}" if cal.eta else UNKNOWN
    return (f"memory traffic is {1 - share:.0%} of the {step_ms:.1f} ms step at batch {batch}, at {eta} of the "
            "ideal bandwidth: kernels and data layout, not launch overhead")


def _line(xs: list[float], ys: list[float]) -> tuple[float, float]:
    n = len(xs)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    if sxx == 0:
        return 0.0, my
    slope = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sxx
    return slope, my - slope * mx


def _r2(ys: list[float], fitted: list[float]) -> float | None:
    my = sum(ys) / len(ys)
    total = sum((y - my) ** 2 for y in ys)
    if total == 0:
        return None
    return 1.0 - sum((y - f) ** 2 for y, f in zip(ys, fitted)) / total
