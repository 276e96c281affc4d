"""Runs on disk: one JSON document per sweep, per-request records beside it.

`<profile data>/runs/<run-id>.json` holds the whole configuration (URL,
model, workload, levels, the launch config when gpudeck launched the server)
and one summary per level; `<run-id>.requests.jsonl` holds every request.
The document is rewritten (atomically) after every level, so a sweep that
dies half-way still leaves its finished levels on disk.
"""
from __future__ import annotations

import json
import os
import time
from pathlib import Path

from profiles.atomic import write_atomic
from profiles.paths import profile_data_dir

from ..fmt import clock
from .metrics import RequestRecord


def runs_dir(profile: str) -> Path:
    return profile_data_dir(profile) / "runs"


def new_run_id(now: float | None = None) -> str:
    return time.strftime("sweep-%Y%m%d-%H%M%S", time.localtime(now or time.time()))


def _create_new(path: Path) -> bool:
    """Create `path` empty, only if nobody has it yet (O_EXCL: atomic across processes)."""
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        return False
    os.close(fd)
    return True


class RunStore:
    """Where one run's files go; claims a free run id.

    Both files are created with O_EXCL before anything is written, so runs
    started in the same second get distinct ids (`-2`, `-3`, ...) and no two
    runs ever append to one requests file.
    """

    def __init__(self, profile: str, run_id: str | None = None):
        self.dir = runs_dir(profile)
        self.dir.mkdir(parents=True, exist_ok=True, mode=0o700)
        base = run_id or new_run_id()
        run_id, n = base, 1
        while True:
            path = self.dir / f"{run_id}.json"
            requests_path = self.dir / f"{run_id}.requests.jsonl"
            if _create_new(path):
                if _create_new(requests_path):
                    break
                path.unlink(missing_ok=True)  # a stray requests file of another run: leave it, move on
            n += 1
            run_id = f"{base}-{n}"
        self.run_id = run_id
        self.path = path
        self.requests_path = requests_path
        self.redact = None       # text -> text: masks the run's secrets in whatever is written

    def discard(self) -> None:
        """Give the id back: the run never started."""
        self.path.unlink(missing_ok=True)
        self.requests_path.unlink(missing_ok=True)

    def drop_if_unsaved(self) -> bool:
        """After the sweep, however it ended: a run file still empty (its first save failed, e.g. on a
        full disk) is removed with an empty requests file, so no 0-byte run is left to be skipped
        later. While the sweep runs, an empty file is a reserved id (a run starting), not a broken one."""
        try:
            if self.path.stat().st_size:
                return False
        except FileNotFoundError:
            return False
        self.path.unlink(missing_ok=True)
        try:
            if not self.requests_path.stat().st_size:
                self.requests_path.unlink()
        except FileNotFoundError:
            pass
        return True

    def _text(self, text: str) -> str:
        return self.redact(text) if self.redact is not None else text

    def save(self, doc: dict) -> Path:
        write_atomic(self.path, self._text(json.dumps(doc, indent=2, default=str) + "\n"))
        return self.path

    def append_requests(self, level: int, concurrency: int, records: list[RequestRecord],
                        level_start: float) -> None:
        with open(self.requests_path, "a", encoding="utf-8") as fh:  # ours: created with O_EXCL
            for record in sorted(records, key=lambda r: r.index):
                fh.write(self._text(json.dumps(request_row(level, concurrency, record, level_start),
                                               separators=(",", ":"))) + "\n")


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
        "failed_at": clock(record.failed_at) if record.failed_at else None,
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
    def key(lv: dict) -> tuple:
        return lv.get("concurrency"), lv.get("request_rate")  # open-loop levels are matched by rate too

    by_c = {key(lv): lv for lv in base["levels"]}
    rows = []
    for level in other["levels"]:
        c = level.get("concurrency")
        if key(level) not in by_c:
            continue
        old = by_c[key(level)]
        row = {"concurrency": c, "status": [old.get("status"), level.get("status")], "metrics": {}}
        if level.get("request_rate") is not None:
            row["request_rate"] = level["request_rate"]
        for key_name, stat in COMPARED:
            a, b = _pick(old, key_name, stat), _pick(level, key_name, stat)
            name = key_name if stat is None else f"{key_name}.{stat}"
            change = (b - a) / a * 100 if a not in (None, 0) and b is not None else None
            row["metrics"][name] = {"base": a, "other": b, "change_pct": change}
        rows.append(row)
    return rows
