"""Run documents: one sweep's results, read into types; the one rule for which level feeds efficiency.

The load generator writes `runs/<run id>.json` (console.bench.results.RunStore,
the one writer). This is the one reader: the Bench tab, the Roofline tab, the
report, the task suggestions and `bench --list` all read runs through it.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from enum import Enum
from pathlib import Path
from typing import Any

from profiles.atomic import StateFileError
from profiles.paths import profile_data_dir

from ..fmt import UNKNOWN
from .scan import Scan, json_files, scan_files

KIND = "run"
# a level's `server.running_is` when the server counted its running requests per step (llama.cpp's busy
# slots per decode call, console/bench/prom.level_view): the batch of its steps, which calibration reads
PER_STEP_RUNNING = "mean busy slots per decode call"


class LevelStatus(str, Enum):
    OK = "ok"
    PARTIAL = "partial"       # cut short (stop, deadline) or some requests failed
    FAILED = "failed"
    SKIPPED = "skipped"
    INTERRUPTED = "interrupted"  # the link to the host was lost during the level (bench/linkcheck.py)
    UNKNOWN = "unknown"       # a document that says nothing, or something unheard of

    @classmethod
    def of(cls, value: Any) -> "LevelStatus":
        try:
            return cls(str(value))
        except ValueError:
            return cls.UNKNOWN


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


@dataclass(frozen=True)
class LevelResult:
    concurrency: int | None
    status: LevelStatus
    output_throughput: float | None
    completed: int | None
    failed: int | None
    raw: dict[str, Any] = field(default_factory=dict, compare=False)

    @property
    def measured_tok_s(self) -> float | None:
        """The output tok/s this level contributes to efficiency, or None.

        The one rule for every view: only a level that ran to the end without
        failures (`ok`, no failed request) measured the server's steady state; a
        partial level's throughput is over a cut-short or partly failing workload.
        An `ok` level that counts failures is a partial one to the task board too
        (profiles.task_suggestion.level_problem), so it feeds no efficiency.
        """
        if self.status is LevelStatus.OK and not self.failed \
                and self.output_throughput is not None and self.output_throughput > 0:
            return self.output_throughput
        return None

    @classmethod
    def from_doc(cls, raw: dict[str, Any]) -> "LevelResult":
        conc = raw.get("concurrency")
        ok_conc = isinstance(conc, int) and not isinstance(conc, bool) and conc >= 1
        done, failed = raw.get("completed"), raw.get("failed")
        return cls(concurrency=conc if ok_conc else None, status=LevelStatus.of(raw.get("status")),
                   output_throughput=_number(raw.get("output_throughput")),
                   completed=done if isinstance(done, int) else None,
                   failed=failed if isinstance(failed, int) else None, raw=raw)


@dataclass
class RunDoc:
    id: str
    path: Path
    mtime: float
    started: str | None
    url: str | None
    model: str | None
    status: str | None
    levels: list[LevelResult]
    raw: dict[str, Any]                 # the document as saved (with "path"), for views that draw it whole

    def tok_s_at(self, concurrency: int) -> float | None:
        return next((lv.measured_tok_s for lv in self.levels
                     if lv.concurrency == concurrency and lv.measured_tok_s is not None), None)

    @property
    def measured(self) -> bool:
        return any(lv.measured_tok_s is not None for lv in self.levels)

    @property
    def config(self) -> str | None:
        return measured_config(self.raw)

    def summary(self) -> dict[str, Any]:
        """What a run list shows (bench --list, the compare picker)."""
        return {"run_id": self.id, "path": str(self.path), "started": self.started, "url": self.url,
                "model": self.model, "status": self.status, "levels": [lv.concurrency for lv in self.levels],
                "config": self.config}


def measured_config(doc: dict[str, Any]) -> str | None:
    """The launch config a run measured: the sweep records the launch serving its port
    (`server_launch`, console/bench/launched.py) when gpudeck launched that server. None for a server
    started some other way, and for runs saved before the field existed."""
    launch = doc.get("server_launch")
    config = launch.get("config") if isinstance(launch, dict) else None
    return config if isinstance(config, str) and config else None


CONFIG_UNKNOWN = "config unknown (a server gpudeck did not launch)"


def run_line(summary: dict[str, Any]) -> str:
    """One line per run for every run list (bench --list, the Bench and Roofline pickers), from `RunDoc.summary`."""
    levels = ",".join(str(c) for c in summary.get("levels") or [])
    config = f"  config {summary['config']}" if summary.get("config") else ""
    return (f"{summary['run_id']}  {summary.get('status') or UNKNOWN:<7} {summary.get('url') or UNKNOWN}  "
            f"levels {levels}{config}")


def runs_dir(profile: str) -> Path:
    return profile_data_dir(profile) / "runs"


def read_run(ref: str | Path, profile: str | None = None) -> RunDoc:
    """A saved run by path, or by run id within the profile's runs/; StateFileError if unreadable."""
    path = Path(ref)
    if not path.exists() and profile is not None:
        path = runs_dir(profile) / f"{ref}.json"
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
        mtime = path.stat().st_mtime
    except FileNotFoundError:
        raise StateFileError(path, "no such run") from None
    except (OSError, ValueError) as exc:
        raise StateFileError(path, f"not a run document ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("levels"), list):
        raise StateFileError(path, "not a run document (no levels)")
    doc.setdefault("path", str(path))
    levels = [LevelResult.from_doc(lv) for lv in doc["levels"] if isinstance(lv, dict)]

    def text(key: str) -> str | None:
        value = doc.get(key)
        return value if isinstance(value, str) else None

    return RunDoc(id=text("run_id") or text("name") or text("id") or path.stem, path=path, mtime=mtime,
                  started=text("started"), url=text("url"), model=text("model"), status=text("status"),
                  levels=levels, raw=doc)


RESERVED_GRACE_S = 600.0  # how long an empty, reserved run file counts as a sweep still starting


def read_runs(profile: str | None = None, folder: Path | None = None) -> Scan[RunDoc]:
    """Every run of a profile (or in `folder`), newest first; unreadable files named."""
    now = time.time()

    def read(path: Path) -> RunDoc | None:
        try:
            stat = path.stat()
        except OSError:
            return None  # gone between the listing and the look
        if stat.st_size == 0:
            # a sweep reserves its id with an empty file and saves the first level into it: a
            # young empty run is "starting", not unreadable; an old one never got its first save
            if now - stat.st_mtime > RESERVED_GRACE_S:
                raise ValueError("empty: reserved by a sweep that never saved")
            return None
        try:
            return read_run(path)
        except StateFileError as exc:
            raise ValueError(exc.reason) from None

    found = scan_files(json_files(folder if folder is not None else runs_dir(profile or "local")), KIND, read)
    found.records.sort(key=lambda r: (r.started or "", r.mtime, r.id), reverse=True)
    return found
