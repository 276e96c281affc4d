"""Runs on disk: one JSON document per sweep, per-request records beside it.

`<profile data>/runs/<run-id>.json` holds the whole configuration (URL,
model, workload, levels, the launch config when gpudeck launched the server)
and one summary per level; `<run-id>.requests.jsonl` holds every request.
The document is rewritten (atomically) after every level, so a sweep that
dies half-way still leaves its finished levels on disk.
"""
from __future__ import annotations

import json
import time
from pathlib import Path

from profiles.atomic import write_atomic
from profiles.paths import profile_data_dir

from .metrics import RequestRecord


def runs_dir(profile: str) -> Path:
    return profile_data_dir(profile) / "runs"


def new_run_id(now: float | None = None) -> str:
    return time.strftime("sweep-%Y%m%d-%H%M%S", time.localtime(now or time.time()))


class RunStore:
    """Where one run's files go; picks a free run id."""

    def __init__(self, profile: str, run_id: str | None = None):
        self.dir = runs_dir(profile)
        self.dir.mkdir(parents=True, exist_ok=True)
        base = run_id or new_run_id()
        run_id, n = base, 1
        while (self.dir / f"{run_id}.json").exists():
            n += 1
            run_id = f"{base}-{n}"
        self.run_id = run_id
        self.path = self.dir / f"{run_id}.json"
        self.requests_path = self.dir / f"{run_id}.requests.jsonl"

    def save(self, doc: dict) -> Path:
        write_atomic(self.path, json.dumps(doc, indent=2, default=str) + "\n")
        return self.path

    def append_requests(self, level: int, concurrency: int, records: list[RequestRecord],
                        level_start: float) -> None:
        with open(self.requests_path, "a", encoding="utf-8") as fh:
            for record in sorted(records, key=lambda r: r.index):
                fh.write(json.dumps(request_row(level, concurrency, record, level_start),
                                    separators=(",", ":")) + "\n")


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 3)


def request_row(level: int, concurrency: int, record: RequestRecord, level_start: float) -> dict:
    return {
        "level": level,
        "concurrency": concurrency,
        "index": record.index,
        "ok": record.ok,
        "sent_s": round(record.start - level_start, 6) if record.start else None,
        "ttft_ms": _ms(record.ttft),
        "tpot_ms": _ms(record.tpot),
        "e2el_ms": _ms(record.e2el),
        "itl_ms": [round(g * 1000, 3) for g in record.itls],
        "output_tokens": record.output_tokens,
        "output_tokens_from": record.output_tokens_from,
        "input_tokens": record.input_tokens,
        "server_tpot_ms": record.server_tpot_ms,
        "error": record.error,
        "failed_at": time.strftime("%H:%M:%S", time.localtime(record.failed_at)) if record.failed_at else None,
    }


def load_run(ref: str | Path, profile: str | None = None) -> dict:
    """A saved run's document by path, or by run id within the profile's runs/ (console.store.runs reads it)."""
    from console.store.runs import read_run

    return read_run(ref, profile).raw


def list_runs(profile: str) -> list[dict]:
    """Earlier runs, newest first: id, time, url, model, levels and status."""
    from console.store.runs import read_runs

    return [run.summary() for run in read_runs(profile).records]


COMPARED = (
    ("output_throughput", None),
    ("request_throughput", None),
    ("ttft_ms", "median"), ("ttft_ms", "p99"),
    ("tpot_ms", "median"), ("tpot_ms", "p99"),
    ("itl_ms", "p99"),
    ("e2el_ms", "median"),
)


def _pick(level: dict, key: str, stat: str | None):
    value = level.get(key)
    if stat is not None:
        value = value.get(stat) if isinstance(value, dict) else None
    return value if isinstance(value, (int, float)) else None


def compare_runs(base: dict, other: dict) -> list[dict]:
    """Per concurrency present in both runs: each metric's two values and the change in %."""
    by_c = {lv.get("concurrency"): lv for lv in base["levels"]}
    rows = []
    for level in other["levels"]:
        c = level.get("concurrency")
        if c not in by_c:
            continue
        row = {"concurrency": c, "status": [by_c[c].get("status"), level.get("status")], "metrics": {}}
        for key, stat in COMPARED:
            a, b = _pick(by_c[c], key, stat), _pick(level, key, stat)
            name = key if stat is None else f"{key}.{stat}"
            change = (b - a) / a * 100 if a not in (None, 0) and b is not None else None
            row["metrics"][name] = {"base": a, "other": b, "change_pct": change}
        rows.append(row)
    return rows
