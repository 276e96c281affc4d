"""Where the time goes: fit bandwidth efficiency and a fixed step overhead to a measured sweep, or say why not.

Each level of a sweep gives a measured time per output token (TPOT) at a
concurrency. The roofline gives the ideal step time x(B): the step's bytes
over the summed bandwidth (or its FLOPs over peak compute, when larger). A
server that reaches a fraction eta of that bandwidth and pays a fixed cost c
per step (kernel launches, scheduling, allreduce latency) takes

    TPOT(B) = x(B) / eta + c

so a least-squares line through (x, TPOT) gives 1/eta as its slope and c as
its intercept. Both must be physical (eta > 0, c >= 0); when the free fit is
not, the bound one is used (c = 0, or a flat line: overhead only).

B is the batch the server stepped, not the number of client streams, when
the server said so: a server with fewer slots than streams runs fewer at
once. A run records the server's own mean of running requests over each
level (console/bench/prom.level_view; llama.cpp's busy slots per decode
call); without it, B is the concurrency.

A line is only an explanation if it reproduces the points it was fitted to.
`calibrate` checks it against them and refuses it ("no fit", with the reason)
when one prediction misses its measured TPOT by more than MAX_MISS, when the
line explains too little of the TPOT's change across levels (r² below MIN_R2
while some point is off by more than CLOSE), or when it needs a bandwidth
above the ideal. `fit` gives only a line that passed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Iterable, Sequence

from ..fmt import UNKNOWN
from .step_times import StepTimes

MAX_MISS = 1.25   # a fitted TPOT more than 25% off a measured one (either way) is no explanation of it
MIN_R2 = 0.9      # below this the line explains too little of how TPOT changes with the batch ...
CLOSE = 1.10      # ... unless every point is within 10% anyway (a flat, overhead-bound sweep has r² near 0)


@dataclass(frozen=True)
class Calibration:
    eta: float | None          # fraction of the ideal bandwidth reached; None when the fit finds no slope
    overhead_s: float          # fixed seconds per decode step
    r2: float | None           # share of the TPOT variance the line explains; None with < 3 levels
    levels_used: tuple[int, ...]
    worst_miss: float = 1.0    # largest fitted/measured TPOT ratio (or its inverse) over the levels used

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
                "levels_used": list(self.levels_used), "worst_miss": round(self.worst_miss, 3)}


@dataclass(frozen=True)
class FitOutcome:
    """A line that reproduces its own points, or None and why there is none."""
    calibration: Calibration | None
    reason: str | None                 # "no fit" reason; None when calibration is set
    tried: Calibration | None = None   # the refused line, for the JSON record (never for display)


def step_batch(concurrency: int, server_batch: float | None) -> int:
    """The batch a level's steps served: the server's own count when it gave one, at most the concurrency."""
    if server_batch is None or server_batch <= 0:
        return concurrency
    return max(1, min(concurrency, round(server_batch)))


def calibrate(roof: StepTimes, points: Iterable[Sequence[float | None]]) -> FitOutcome:
    """Fit (concurrency, TPOT seconds[, the server's batch]) levels and check the line against them."""
    levels: dict[int, tuple[int, float]] = {}
    for point in points:
        c, t = int(point[0] or 0), point[1]
        server_batch = point[2] if len(point) > 2 else None
        if c >= 1 and t and t > 0:
            levels[c] = (step_batch(c, server_batch), float(t))
    pts = sorted(levels.items())
    if len(pts) < 2:
        return FitOutcome(None, "fewer than two finished levels with a TPOT, nothing to fit")
    used = tuple(c for c, _ in pts)
    batches = [b for _, (b, _) in pts]
    xs = [roof.step_time_s(b, "ideal") for b in batches]
    ys = [t for _, (_, t) in pts]
    slope, intercept = _line(xs, ys)
    if slope <= 0:                       # TPOT does not grow with bytes: all of it is overhead
        slope, intercept = 0.0, sum(ys) / len(ys)
    elif intercept < 0:                  # no negative overhead: a line through the origin
        slope, intercept = sum(x * y for x, y in zip(xs, ys)) / sum(x * x for x in xs), 0.0
    fitted = [slope * x + intercept for x in xs]
    misses = [max(f / y, y / f) if f > 0 else float("inf") for f, y in zip(fitted, ys)]
    cal = Calibration(eta=1.0 / slope if slope > 0 else None, overhead_s=intercept,
                      r2=_r2(ys, fitted) if len(pts) >= 3 else None, levels_used=used, worst_miss=max(misses))
    reason = _refusal(cal, pts, xs, fitted, misses)
    return FitOutcome(None, reason, cal) if reason else FitOutcome(cal, None)


def fit(roof: StepTimes, points: Iterable[Sequence[float | None]]) -> Calibration | None:
    """The checked line, or None when there is none (too few levels, or a line that misses its own points)."""
    return calibrate(roof, points).calibration


def _refusal(cal: Calibration, pts, xs: list[float], fitted: list[float], misses: list[float]) -> str | None:
    """Why this line is no explanation of the levels it was fitted to; None when it is one."""
    worst = max(range(len(misses)), key=lambda i: misses[i])
    c, (_, measured) = pts[worst]
    spread = (f"; TPOT goes {_ms(pts[0][1][1])} → {_ms(pts[-1][1][1])} ms from c={pts[0][0]} to c={pts[-1][0]} "
              f"while the ideal step goes {_ms(xs[0])} → {_ms(xs[-1])} ms")
    miss = (f"it gives {_ms(fitted[worst])} ms at c={c} where {_ms(measured)} ms was measured "
            f"({misses[worst]:.1f}x off)")
    r2 = f"r² {cal.r2:.2f}" if cal.r2 is not None else ""
    if cal.eta is not None and cal.eta > 1.0:
        return (f"the line needs {cal.eta:.0%} of the ideal bandwidth, more than the GPUs have: the roofline's bytes "
                f"per step (its context, its dtypes) are more than this server moved{spread}")
    if misses[worst] > MAX_MISS:
        return f"{r2 + ', and ' if r2 else ''}{miss}{spread}"
    if cal.r2 is not None and cal.r2 < MIN_R2 and misses[worst] > CLOSE:
        return f"{r2}: the line explains too little of how TPOT changes with the batch; {miss}{spread}"
    return None


def _ms(seconds: float) -> str:
    """Milliseconds to three figures, without an exponent."""
    ms = seconds * 1e3
    return f"{ms:,.0f}" if ms >= 100 else f"{ms:.3g}"


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
