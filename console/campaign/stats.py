"""How sure a campaign can be: means and 95% confidence intervals from repeats and per-request samples.

A level measured once on a busy host says little: the load, the clocks and the
caches move between cells. Each level is therefore measured in several repeats,
and every number the campaign compares comes with an interval from a
hierarchical bootstrap: the repeats are resampled, then the requests within
each chosen repeat, and the statistic is recomputed each time. Throughput is
recomputed from the resampled requests' tokens and latencies (closed loop,
Little's law: tok/s is proportional to the tokens over the latency), scaled to
the level's measured rate. The generator is seeded from the data, so the same
campaign always gives the same intervals.

A bootstrap over three repeats is far too sure of itself (it can only ever see
three values), so the interval used is the wider of the bootstrap's and a
t-interval over the repeats' own spread (t = 4.30 for three repeats, where a
normal interval would use 1.96). Every figure compared is positive and skewed,
so that t-interval is taken on the log scale (`intervals`): no bound falls
below zero, where a t-interval on the raw values gave a throughput of −15 tok/s.
With one repeat only the requests speak; with one repeat and no requests kept,
there is no interval at all.

Pure functions, no I/O. Results are cached: a screen redraws often, the data
changes only when a repeat ends.
"""
from __future__ import annotations

import math
import random
import zlib
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Sequence

from ..fmt import UNKNOWN
from . import intervals
from .intervals import t975

RESAMPLES = 400
LEVEL_CI = 0.95
SAMPLE_CAP = 64          # per-request samples a level keeps per repeat (evenly spread over the requests)
METHOD = (f"95% CI: the wider of a hierarchical bootstrap ({RESAMPLES} resamples of the repeats, then of the "
          f"requests within each; percentile, seeded from the data) and a {intervals.METHOD} over the repeats' "
          "spread; bounds stay above zero, differences are ratios of means on the log scale")
METRICS = ("tps", "ttft_p50", "ttft_p99", "tpot_p50", "tpot_p99")


@dataclass(frozen=True)
class Repeat:
    """One repeat of one level: what the load generator reported, and a sample of its requests."""
    tps: float | None                       # the level's measured output tok/s
    ttft_p50: float | None = None
    ttft_p99: float | None = None
    tpot_p50: float | None = None
    tpot_p99: float | None = None
    ttft: tuple[float, ...] = ()            # ms, per successful request (a capped, even sample)
    tpot: tuple[float, ...] = ()
    tokens: tuple[float, ...] = ()          # output tokens and end-to-end latency (ms), request by request
    e2el: tuple[float, ...] = ()

    @classmethod
    def from_row(cls, row: dict) -> "Repeat":
        """From a campaign level row (console.campaign.runner.level_row, with its `samples`)."""
        found = row.get("samples")
        samples: dict = found if isinstance(found, dict) else {}

        def nums(key: str) -> tuple[float, ...]:
            values = samples.get(key)
            if not isinstance(values, list):
                return ()
            return tuple(float(v) for v in values[:SAMPLE_CAP * 4]
                         if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v))

        def num(key: str) -> float | None:
            v = row.get(key)
            return float(v) if isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v) else None

        tokens, e2el = nums("tokens"), nums("e2el_ms")
        if len(tokens) != len(e2el):
            tokens = e2el = ()
        return cls(tps=num("output_throughput"), ttft_p50=num("ttft_p50"), ttft_p99=num("ttft_p99"),
                   tpot_p50=num("tpot_p50"), tpot_p99=num("tpot_p99"), ttft=nums("ttft_ms"), tpot=nums("tpot_ms"),
                   tokens=tokens, e2el=e2el)

    def point(self, metric: str) -> float | None:
        return getattr(self, metric)

    def sampled(self, metric: str) -> bool:
        """Were requests kept for this metric (else it has no spread of its own)?"""
        if metric == "tps":
            return bool(self.tokens)
        return bool(self.ttft if metric.startswith("ttft") else self.tpot)

    def resampled(self, metric: str, rng: random.Random) -> float | None:
        """The metric recomputed over the requests drawn with replacement (the point value when none were kept)."""
        if metric == "tps":
            if self.tps is None or not self.tokens or sum(self.e2el) <= 0 or sum(self.tokens) <= 0:
                return self.tps
            idx = rng.choices(range(len(self.tokens)), k=len(self.tokens))
            tok, lat = sum(self.tokens[i] for i in idx), sum(self.e2el[i] for i in idx)
            if lat <= 0:
                return self.tps
            return self.tps * (tok / lat) / (sum(self.tokens) / sum(self.e2el))
        values = self.ttft if metric.startswith("ttft") else self.tpot
        if not values:
            return self.point(metric)
        return percentile(rng.choices(values, k=len(values)), 99.0 if metric.endswith("p99") else 50.0)


def percentile(values: Sequence[float], q: float) -> float:
    """Linear interpolation between order statistics (numpy's default)."""
    ordered = sorted(values)
    if len(ordered) == 1:
        return ordered[0]
    pos = (len(ordered) - 1) * q / 100.0
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def thin(values: Sequence, cap: int = SAMPLE_CAP) -> list:
    """At most `cap` of the values, evenly spread (deterministic: no randomness in what is kept)."""
    if len(values) <= cap:
        return list(values)
    step = len(values) / cap
    return [values[int(i * step)] for i in range(cap)]


@dataclass(frozen=True)
class Estimate:
    """A mean over repeats and its 95% interval; n says how many repeats and requests it rests on."""
    mean: float | None
    lo: float | None
    hi: float | None
    repeats: int = 0
    requests: int = 0

    def to_json(self) -> dict:
        return {"mean": self.mean, "ci": [self.lo, self.hi] if self.lo is not None else None,
                "repeats": self.repeats, "requests": self.requests}


@dataclass(frozen=True)
class Difference:
    """How much A beats B, in percent of B, with its 95% interval."""
    pct: float | None
    lo: float | None
    hi: float | None
    paired: bool = False

    def beyond(self, min_effect_pct: float) -> bool:
        """The whole interval is above zero and above the smallest effect worth naming a winner."""
        return self.lo is not None and self.lo > 0 and self.lo >= min_effect_pct

    def text(self) -> str:
        if self.pct is None:
            return UNKNOWN
        if self.lo is None:
            return f"{self.pct:+.1f}%, no interval: one repeat and no per-request samples"
        return f"{self.pct:+.1f}%, CI {signed(self.lo)} … {signed(self.hi)}"

    def to_json(self) -> dict:
        return {"pct": self.pct, "ci": [self.lo, self.hi] if self.lo is not None else None, "paired": self.paired}


def signed(pct: float | None) -> str:
    """+6.7% / −4.1% (a true minus sign, as the interval reads in prose)."""
    if pct is None:
        return UNKNOWN
    return f"{pct:+.1f}%".replace("-", "−")


def _stdev(values: Sequence[float]) -> float:
    m = _mean(values)
    return math.sqrt(sum((v - m) ** 2 for v in values) / (len(values) - 1))


def _t_interval(values: Sequence[float]) -> tuple[float, float] | None:
    """What the repeats' own spread allows (None with one repeat): on the log scale for positive values;
    a value at or below zero (never a measured rate or latency) falls back to mean ± t(n-1)·s/√n."""
    if len(values) < 2:
        return None
    found = intervals.positive_mean(values)
    if found is not None:
        return found
    m, half = _mean(values), t975(len(values) - 1) * _stdev(values) / math.sqrt(len(values))
    return m - half, m + half


def _wider(a: tuple[float | None, float | None], b: tuple[float, float] | None) -> tuple[float | None, float | None]:
    lo, hi = a   # both or neither
    if b is None or lo is None or hi is None:
        return a if lo is not None else (b if b is not None else (None, None))
    return min(lo, b[0]), max(hi, b[1])


def _seed(*parts) -> int:
    return zlib.crc32(repr(parts).encode())


def _mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def _replicate(metric: str, repeats: Sequence[Repeat], picks: Sequence[int], rng: random.Random) -> float | None:
    values = [v for i in picks if (v := repeats[i].resampled(metric, rng)) is not None]
    return _mean(values) if values else None


def _points(metric: str, repeats: Sequence[Repeat]) -> list[float]:
    """The repeats' values of the metric, those that have one."""
    return [p for r in repeats if (p := r.point(metric)) is not None]


def _interval(values: list[float]) -> tuple[float | None, float | None]:
    if not values:
        return None, None
    values.sort()
    tail = (1 - LEVEL_CI) / 2
    return percentile(values, 100 * tail), percentile(values, 100 * (1 - tail))


@lru_cache(maxsize=4096)
def estimate(metric: str, repeats: tuple[Repeat, ...]) -> Estimate:
    """The metric's mean over the repeats and its bootstrap 95% interval."""
    usable = tuple(r for r in repeats if r.point(metric) is not None)
    if not usable:
        return Estimate(None, None, None)
    mean = _mean(_points(metric, usable))
    n = len(usable)
    if n == 1 and not usable[0].sampled(metric):
        return Estimate(mean, None, None, repeats=1)   # one number, nothing to say how far it might be off
    rng = random.Random(_seed(metric, usable))
    reps = []
    for _ in range(RESAMPLES):
        value = _replicate(metric, usable, rng.choices(range(n), k=n), rng)
        if value is not None:
            reps.append(value)
    lo, hi = _wider(_interval(reps), _t_interval(_points(metric, usable)))
    if lo is None:
        return Estimate(mean, None, None, repeats=n)
    requests = sum(len(r.tokens) if metric == "tps" else len(r.ttft if metric.startswith("ttft") else r.tpot)
                   for r in usable)
    return Estimate(mean, lo, hi, repeats=n, requests=requests)


def _t_difference(a: Sequence[Repeat], b: Sequence[Repeat], metric: str,
                  paired: bool) -> tuple[float, float] | None:
    """The t interval of A over B in percent, on the log scale: from the rounds' paired log ratios, else Welch's."""
    va, vb = _points(metric, a), _points(metric, b)   # each repeat has one: `difference` kept only those
    return intervals.ratio_pct(va, vb, paired)


@lru_cache(maxsize=4096)
def difference(metric: str, a: tuple[Repeat, ...], b: tuple[Repeat, ...], paired: bool = True) -> Difference:
    """A's mean over B's, minus one, in percent, with a 95% interval.

    Paired when both have the same number of repeats and `paired` is asked:
    repeat i of A and repeat i of B ran in the same round, close in time, so
    they are resampled together and drift that hit both cancels."""
    a = tuple(r for r in a if r.point(metric) is not None)
    b = tuple(r for r in b if r.point(metric) is not None)
    if not a or not b:
        return Difference(None, None, None)
    base = _mean(_points(metric, b))
    if base <= 0:
        return Difference(None, None, None)
    pct = (_mean(_points(metric, a)) / base - 1) * 100
    paired = paired and len(a) == len(b) and len(a) > 1
    if (len(a) == 1 and not a[0].sampled(metric)) or (len(b) == 1 and not b[0].sampled(metric)):
        return Difference(round(pct, 1), None, None, paired)
    rng = random.Random(_seed("diff", metric, a, b))
    reps = []
    for _ in range(RESAMPLES):
        pa = rng.choices(range(len(a)), k=len(a))
        pb = pa if paired else rng.choices(range(len(b)), k=len(b))
        va, vb = _replicate(metric, a, pa, rng), _replicate(metric, b, pb, rng)
        if va is not None and vb:
            reps.append((va / vb - 1) * 100)
    lo, hi = _wider(_interval(reps), _t_difference(a, b, metric, paired))
    if lo is None or hi is None:  # both or neither
        return Difference(round(pct, 1), None, None, paired)
    return Difference(round(pct, 1), round(lo, 1), round(hi, 1), paired)


def repeats_of(rows: Sequence[dict]) -> tuple[Repeat, ...]:
    return tuple(Repeat.from_row(r) for r in rows)


@dataclass
class LevelStats:
    """Everything the answer says about one config at one level."""
    concurrency: int
    repeats: tuple[Repeat, ...] = ()
    estimates: dict[str, Estimate] = field(default_factory=dict)

    @classmethod
    def of(cls, concurrency: int, rows: Sequence[dict], detail: bool = True) -> "LevelStats":
        """Every metric's interval with `detail`; else only throughput's (the latencies' means still hold):
        a list of campaigns or a table needs no latency intervals, and the bootstrap is not free."""
        reps = repeats_of(rows)
        return cls(concurrency, reps, {m: estimate(m, reps) for m in (METRICS if detail else ("tps",))})

    def mean(self, metric: str) -> float | None:
        if metric in self.estimates:
            return self.estimates[metric].mean
        values = _points(metric, self.repeats)
        return _mean(values) if values else None

    def to_json(self) -> dict:
        return {m: e.to_json() for m, e in self.estimates.items()}
