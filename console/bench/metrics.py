"""Serving-benchmark metrics with the definitions vLLM's benchmark uses.

Times are seconds on the client's monotonic clock, relative to the moment a
request was sent. Statistics cover successful requests only.

- TTFT: first chunk carrying content minus request start.
- ITL: the gaps between consecutive content chunks (pooled over requests).
- E2EL: last content chunk minus request start.
- TPOT: (E2EL - TTFT) / (output tokens - 1), for requests with > 1 token.
- Throughputs: totals over the level's wall time (first send to last finish);
  null when no request succeeded.
- Goodput: requests per second that met every given SLO.
- Percentiles interpolate linearly between order statistics; std is the
  population standard deviation (both as numpy's defaults, which vLLM uses).

A level can hold hundreds of thousands of chunks, so the per-chunk steps run
in C (`map` over `operator` functions) rather than as Python
loops; the arithmetic, and so every figure, is the same as the plain loops'.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from itertools import chain, islice, repeat
from operator import mul, sub
from typing import Iterable

SLO_KEYS = ("ttft", "tpot", "itl", "e2el")


@dataclass
class RequestRecord:
    """What one request did, as the client saw it."""

    index: int
    ok: bool = False
    start: float = 0.0                 # monotonic send time
    chunk_times: list[float] = field(default_factory=list)  # content chunks, relative to start
    output_tokens: int | None = None
    output_tokens_from: str = "chunks"  # "usage" when the server counted them
    input_tokens: int | None = None
    error: str | None = None
    failed_at: float | None = None     # wall-clock time of the failure
    server_tpot_ms: float | None = None  # llama.cpp's own timings, when present
    queue_s: float | None = None       # open loop: due time to send time (the client's own queue)

    @property
    def ttft(self) -> float | None:
        return self.chunk_times[0] if self.chunk_times else None

    @property
    def e2el(self) -> float | None:
        return self.chunk_times[-1] if self.chunk_times else None

    @property
    def itls(self) -> list[float]:
        times = self.chunk_times
        return list(map(sub, islice(times, 1, None), times))

    @property
    def tpot(self) -> float | None:
        tokens = self.output_tokens
        if not self.chunk_times or tokens is None or tokens < 2:
            return None
        return (self.chunk_times[-1] - self.chunk_times[0]) / (tokens - 1)


def percentile(sorted_values: list[float], q: float) -> float:
    """The q-th percentile (0..100) of already sorted values, linear interpolation."""
    if not sorted_values:
        raise ValueError("percentile of nothing")
    pos = (len(sorted_values) - 1) * q / 100.0
    low = math.floor(pos)
    high = min(low + 1, len(sorted_values) - 1)
    frac = pos - low
    return sorted_values[low] + (sorted_values[high] - sorted_values[low]) * frac


def percentile_key(q: float) -> str:
    """`p99`, `p99.9`: the name vLLM gives a percentile."""
    return f"p{int(q)}" if float(q).is_integer() else f"p{q:g}"


def parse_percentiles(text: str) -> list[float]:
    """`50,90,99.9` -> [50.0, 90.0, 99.9]; each strictly between 0 and 100 (or 100)."""
    out = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            q = float(part)
        except ValueError:
            raise ValueError(f"bad percentile {part!r}: use numbers like 50,90,99.9") from None
        if not (0 < q <= 100):
            raise ValueError(f"bad percentile {part!r}: must be in (0, 100]")
        out.append(q)
    if not out:
        raise ValueError("--percentiles is empty: use numbers like 50,90,99")
    return out


def distribution(values: Iterable[float], scale: float = 1000.0,
                 percentiles: Iterable[float] = ()) -> dict:
    """mean / median / p90 / p99 / std of values (seconds), scaled (to ms by default).

    `percentiles` adds more keys (`p95`, `p99.9`). No values gives nulls: an
    unknown is never reported as 0.
    """
    data = sorted(map(mul, values, repeat(scale)))
    extra = [q for q in percentiles if percentile_key(q) not in ("p90", "p99")]
    if not data:
        out = {"mean": None, "median": None, "p90": None, "p99": None, "std": None}
        out.update({percentile_key(q): None for q in extra})
        return out
    mean = sum(data) / len(data)
    deviations = list(map(sub, data, repeat(mean)))
    var = sum(map(mul, deviations, deviations)) / len(data)
    out = {
        "mean": mean,
        "median": percentile(data, 50),
        "p90": percentile(data, 90),
        "p99": percentile(data, 99),
        "std": math.sqrt(var),
    }
    out.update({percentile_key(q): percentile(data, q) for q in extra})
    return out


def peak_output_rate(records: list[RequestRecord], level_start: float) -> float | None:
    """The most content chunks that arrived in any one whole second of the level (tokens/s)."""
    buckets: dict[int, int] = {}
    for r in records:
        if not r.ok:
            continue
        for t in r.chunk_times:
            second = int(r.start + t - level_start)
            buckets[second] = buckets.get(second, 0) + 1
    return float(max(buckets.values())) if buckets else None


def parse_slo(text: str) -> dict[str, float]:
    """`ttft=500,tpot=50` -> {"ttft": 500.0, "tpot": 50.0} (milliseconds)."""
    slo: dict[str, float] = {}
    for part in filter(None, (p.strip() for p in text.split(","))):
        key, sep, value = part.partition("=")
        key = key.strip().lower()
        if not sep or key not in SLO_KEYS:
            raise ValueError(f"bad SLO {part!r}: use ttft=MS,tpot=MS,itl=MS,e2el=MS")
        try:
            slo[key] = float(value.strip().removesuffix("ms"))
        except ValueError:
            raise ValueError(f"bad SLO value in {part!r}: a number of milliseconds") from None
        if slo[key] <= 0:
            raise ValueError(f"bad SLO value in {part!r}: must be > 0")
    return slo


def meets_slo(record: RequestRecord, slo: dict[str, float]) -> bool:
    """A request is good when every metric named in the SLO is within it (ms)."""
    checks = {"ttft": record.ttft, "tpot": record.tpot, "e2el": record.e2el}
    for key, limit in slo.items():
        if key == "itl":
            times = record.chunk_times
            if len(times) > 1 and max(map(sub, islice(times, 1, None), times)) * 1000 > limit:
                return False
            continue
        value = checks[key]
        if value is not None and value * 1000 > limit:
            return False
    return True


def summarize(records: list[RequestRecord], duration_s: float | None,
              slo: dict[str, float] | None = None, percentiles: Iterable[float] = (),
              level_start: float | None = None) -> dict:
    """The metric part of one level's summary, from its request records."""
    pct = tuple(percentiles)
    good = [r for r in records if r.ok]
    # a request whose prompt length is unknown makes the total unknown, not smaller
    input_tokens = None if any(r.input_tokens is None for r in good) else sum(r.input_tokens for r in good)
    output_tokens = sum(r.output_tokens or 0 for r in good)
    # Nothing succeeded: nothing was measured, so the rates are unknown rather than 0.
    measured = bool(good) and duration_s is not None and duration_s > 0
    rate = (lambda n: n / duration_s) if measured else (lambda n: None)
    doc = {
        "duration_s": duration_s,
        "input_tokens": input_tokens,
        "output_tokens": output_tokens,
        "output_tokens_counted": "usage" if good and all(r.output_tokens_from == "usage" for r in good)
        else ("chunks" if good else None),
        "request_throughput": rate(len(good)),
        "output_throughput": rate(output_tokens),
        "total_token_throughput": rate(input_tokens + output_tokens) if input_tokens is not None else None,
        "ttft_ms": distribution((r.ttft for r in good if r.ttft is not None), percentiles=pct),
        "tpot_ms": distribution((t for t in (r.tpot for r in good) if t is not None), percentiles=pct),
        "itl_ms": distribution(chain.from_iterable(r.itls for r in good), percentiles=pct),
        "e2el_ms": distribution((r.e2el for r in good if r.e2el is not None), percentiles=pct),
    }
    queued = [r.queue_s for r in records if r.queue_s is not None]
    if queued:
        doc["queue_ms"] = distribution(queued, percentiles=pct)
    if level_start is not None:
        doc["peak_output_throughput"] = peak_output_rate(records, level_start)
    if slo:
        met = sum(1 for r in good if meets_slo(r, slo))
        doc["slo_ms"] = dict(slo)
        doc["good_requests"] = met
        doc["goodput"] = rate(met)
    return doc
