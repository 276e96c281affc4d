"""Two saved runs compared one way everywhere: A, the run that started first, then B, the later one;
each change reads `A → B (B against A)`, in the CLI and in the Bench tab alike, whichever order
they were picked in. Each change carries a noise mark worked out with the campaign's statistics
(console.campaign.stats): `within noise` when the 95% interval of the difference holds zero (a
level of a few requests moves its p99 by half and more from one run to the next), `beyond noise`
when it does not, and no mark where neither run kept per-request samples to say.
"""
from __future__ import annotations

from typing import Any

from console.bench.results import compare_runs
from console.campaign import stats
from console.campaign.runner import level_row
from console.campaign.samples import read_requests, samples_of

# the compared metrics that the campaign's statistics can put an interval on
NOISE_METRICS = {"output_throughput": "tps", "ttft_ms.median": "ttft_p50", "ttft_ms.p99": "ttft_p99",
                 "tpot_ms.median": "tpot_p50", "tpot_ms.p99": "tpot_p99"}


def in_order(x: dict, y: dict) -> tuple[dict, dict]:
    """The two runs as A (started first) and B."""
    def when(doc: dict) -> tuple[str, str]:
        return str(doc.get("started") or ""), str(doc.get("run_id") or "")
    return (x, y) if when(x) <= when(y) else (y, x)


def _repeat(doc: dict, level: dict, requests: dict[int, list[dict]]) -> tuple[stats.Repeat, ...]:
    row = level_row(level)
    rows = requests.get(level.get("concurrency")) if isinstance(level.get("concurrency"), int) else None
    if rows:
        row["samples"] = samples_of(rows)
    return stats.repeats_of([row])


def noise_mark(difference: stats.Difference) -> str | None:
    if difference.lo is None or difference.hi is None:
        return None
    return "within noise" if difference.lo <= 0 <= difference.hi else "beyond noise"


def compare(x: dict, y: dict, profile: str | None) -> dict[str, Any]:
    """{"a": run id, "b": run id, "levels": compare_runs rows (base = A, other = B), each metric with
    `noise` (a mark or None) and `ci_pct` (B against A, its 95% interval, or None)}."""
    a, b = in_order(x, y)
    rows = compare_runs(a, b)
    req_a = read_requests(profile, a.get("run_id")) if profile else {}
    req_b = read_requests(profile, b.get("run_id")) if profile else {}
    by_key = {(lv.get("concurrency"), lv.get("request_rate")): lv for lv in a.get("levels") or []}
    for row, level_b in zip(rows, [lv for lv in b.get("levels") or []
                                   if (lv.get("concurrency"), lv.get("request_rate")) in by_key]):
        level_a = by_key[(level_b.get("concurrency"), level_b.get("request_rate"))]
        rep_a, rep_b = _repeat(a, level_a, req_a), _repeat(b, level_b, req_b)
        for name, metric in row["metrics"].items():
            metric["noise"], metric["ci_pct"] = None, None
            if name in NOISE_METRICS and metric.get("change_pct") is not None:
                diff = stats.difference(NOISE_METRICS[name], rep_b, rep_a, paired=False)
                metric["noise"] = noise_mark(diff)
                if diff.lo is not None:
                    metric["ci_pct"] = [diff.lo, diff.hi]
    return {"a": a.get("run_id"), "b": b.get("run_id"), "levels": rows}
