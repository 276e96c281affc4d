"""Per-request samples for a campaign's intervals, read from the requests file the load generator wrote.

Each level keeps at most `stats.SAMPLE_CAP` requests (evenly spread), so the
state file stays small however long the sweep: TTFT and TPOT for the latency
intervals, output tokens and end-to-end latency for the throughput interval.
"""
from __future__ import annotations

import json
import math

from ..bench.results import runs_dir
from .stats import thin

MAX_LINES = 200_000          # a requests file is ours, but it is still read with a bound
MAX_LINE = 1 << 20


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


def read_requests(profile: str, run_id: str | None) -> dict[int, list[dict]]:
    """The successful requests of a run, by concurrency level; {} when the file is missing or unreadable."""
    if not run_id or "/" in run_id or run_id.startswith("."):
        return {}
    path = runs_dir(profile) / f"{run_id}.requests.jsonl"
    out: dict[int, list[dict]] = {}
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for n, line in enumerate(fh):
                if n >= MAX_LINES:
                    break
                if len(line) > MAX_LINE:
                    continue
                try:
                    row = json.loads(line)
                except ValueError:
                    continue
                c = row.get("concurrency") if isinstance(row, dict) else None
                if isinstance(c, int) and not isinstance(c, bool) and row.get("ok") is True:
                    out.setdefault(c, []).append(row)
    except OSError:
        return {}
    return out


def samples_of(rows: list[dict]) -> dict:
    kept = thin(sorted(rows, key=lambda r: r.get("index") if isinstance(r.get("index"), int) else 0))
    both = [(t, e) for t, e in ((_num(r.get("output_tokens")), _num(r.get("e2el_ms"))) for r in kept)
            if t is not None and e is not None]
    return {"ttft_ms": [round(v, 2) for v in (_num(r.get("ttft_ms")) for r in kept) if v is not None],
            "tpot_ms": [round(v, 3) for v in (_num(r.get("tpot_ms")) for r in kept) if v is not None],
            "tokens": [t for t, _e in both], "e2el_ms": [round(e, 2) for _t, e in both]}


def token_counts(rows: list[dict]) -> dict:
    """The server's count of the tokens it generated (its `usage`; None when a response had none) beside
    the content chunks the client received, over the level's successful requests (`validity` compares them)."""
    chunks = sum(len(r["itl_ms"]) + 1 for r in rows
                 if isinstance(r.get("itl_ms"), list) and _num(r.get("ttft_ms")) is not None)
    counted = [_num(r.get("output_tokens")) for r in rows if r.get("output_tokens_from") == "usage"]
    server = sum(v for v in counted if v is not None) if rows and len(counted) == len(rows) \
        and None not in counted else None
    return {"server": server, "client": chunks}


def attach_samples(profile: str, run_id: str | None, levels: list[dict]) -> None:
    """Add each level's `samples` and `token_counts` in place (levels without requests on disk keep none)."""
    by_level = read_requests(profile, run_id)
    for level in levels:
        concurrency = level.get("concurrency")
        rows = by_level.get(concurrency) if concurrency is not None else None
        if rows:
            level["samples"] = samples_of(rows)
            level["token_counts"] = token_counts(rows)
