"""Intervals for positive quantities: bounds that stay where a throughput or a latency can be.

A throughput or a latency is positive and skewed (a slow round is much slower,
a fast one only a little faster). Student's t on the raw repeats treats it as
symmetric and unbounded: three noisy repeats of 53.7 tok/s gave an interval
from −15.5 to 122.9. Here the repeats are taken on the log scale, where a
positive, multiplicative spread is symmetric, and the interval is mapped back:

- the mean of one config: Cox's interval for the mean of a log-normal,
  exp(ȳ + s²/2 ± t·√(s²/n + s⁴/(2(n−1)))), ȳ and s the mean and spread of the
  logs; both bounds are above zero by construction;
- the difference of two configs: the ratio of their means on the log scale,
  from the rounds' paired log ratios when they ran side by side, else by
  Welch's sum of the two spreads; mapped back to percent it keeps its sign and
  can never claim that a config lost more than all of its throughput.

Pure functions, no I/O; `stats` combines them with its hierarchical bootstrap.
"""
from __future__ import annotations

import math
from typing import Sequence

METHOD = "log-normal (Cox) t-interval on the log scale"

# Student's t, 97.5th percentile, by degrees of freedom (between entries the next larger df is used)
T975 = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262, 10: 2.228,
        12: 2.179, 15: 2.131, 20: 2.086, 30: 2.042}


def t975(df: float) -> float:
    """Student's t, 97.5th percentile: the normal 1.96 understates the spread of a mean over few repeats."""
    if df < 1:
        return float("inf")
    df = math.floor(df)
    return T975.get(df) or next((T975[k] for k in sorted(T975) if k >= df), 1.96)


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _var(values: Sequence[float]) -> float:
    m = _mean(values)
    return sum((v - m) ** 2 for v in values) / (len(values) - 1)


def _logs(values: Sequence[float]) -> list[float] | None:
    """The logs of the values, or None when one is not positive (the log scale does not hold it)."""
    if any(v <= 0 or not math.isfinite(v) for v in values):
        return None
    return [math.log(v) for v in values]


def positive_mean(values: Sequence[float]) -> tuple[float, float] | None:
    """Cox's 95% interval for the mean of positive repeats (None with fewer than two, or a value ≤ 0)."""
    logs = _logs(values)
    if logs is None or len(logs) < 2:
        return None
    n, ybar, s2 = len(logs), _mean(logs), _var(logs)
    centre = ybar + s2 / 2
    half = t975(n - 1) * math.sqrt(s2 / n + s2 * s2 / (2 * (n - 1)))
    try:
        return math.exp(centre - half), math.exp(centre + half)
    except OverflowError:
        return math.exp(centre - half), float("inf")


def ratio_pct(a: Sequence[float], b: Sequence[float], paired: bool) -> tuple[float, float] | None:
    """The 95% interval of A's mean over B's, minus one, in percent, from the log scale.

    Paired: repeat i of each ran in the same round, so the interval rests on the
    rounds' log ratios (drift that hit both cancels). Else Welch: the two logs'
    spreads added, with Welch–Satterthwaite's degrees of freedom."""
    la, lb = _logs(a), _logs(b)
    if la is None or lb is None:
        return None
    if paired:
        if len(la) != len(lb) or len(la) < 2:
            return None
        d = [x - y for x, y in zip(la, lb)]
        centre, half = _mean(d), t975(len(d) - 1) * math.sqrt(_var(d) / len(d))
    else:
        if len(la) < 2 or len(lb) < 2:
            return None
        va, vb = _var(la) / len(la), _var(lb) / len(lb)
        # the ratio of the means, each taken as a log-normal mean (Cox), so a skewed config is not undersold
        centre = (_mean(la) + _var(la) / 2) - (_mean(lb) + _var(lb) / 2)
        se2 = va + vb
        if se2 <= 0:
            return (math.exp(centre) - 1) * 100, (math.exp(centre) - 1) * 100
        df = se2 ** 2 / ((va ** 2 / (len(la) - 1) if va else 0) + (vb ** 2 / (len(lb) - 1) if vb else 0))
        half = t975(df) * math.sqrt(se2)
    try:
        return (math.exp(centre - half) - 1) * 100, (math.exp(centre + half) - 1) * 100
    except OverflowError:
        return (math.exp(centre - half) - 1) * 100 if centre - half < 700 else float("inf"), float("inf")
