"""Crash records: what died, when, why, and what was running; one id each, written once.

The record of a launch's crash is `crashes/<launch id>.json`, created with an
exclusive link, so the monitor of a console, another console and a CLI call
that all see the same finished launch write one record between them; the
losers read the winner's.
"""
from __future__ import annotations

import json
import os
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Protocol

from profiles import paths

from ..fmt import UNKNOWN
from .scan import Scan, json_files, read_json, scan_files

if TYPE_CHECKING:   # types only: the store imports no server code at run time
    from ..servers.triage.verdict import TriageResult


class Launch(Protocol):
    """What a crash record takes from a launch (a `launches.LaunchRecord`, whose module imports
    this one: named here by what it holds)."""
    @property
    def id(self) -> str: ...
    @property
    def config(self) -> str: ...
    @property
    def log(self) -> str | None: ...
    @property
    def started_at(self) -> float: ...
    @property
    def stopped_at(self) -> float | None: ...
    @property
    def exit_status(self) -> int | None: ...
    @property
    def flags(self) -> dict[str, Any]: ...

KIND = "crash record"
MAX_RECORD_BYTES = 4 << 20   # a record holds a short excerpt; anything near this is not one gpudeck wrote


@dataclass(frozen=True)
class CrashRecord:
    id: str
    config: str | None
    cls: str                      # the triage class (`class` on disk)
    time: str                     # ISO local time of the death
    launch: str | None = None     # the LaunchRecord id
    line: int | None = None
    summary: str = ""
    excerpt: tuple[str, ...] = ()
    exit_status: int | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    server: str | None = None
    log: str | None = None
    sweep: str | None = None      # "<run id> level <concurrency>" when a sweep was running
    started_at: str | None = None
    sources: tuple[str, ...] = ()  # the kinds of evidence the class rests on (process, log lifecycle, ...)
    # how strong the verdict is: its evidence kinds (process, scheduler, driver, structure, phrase), a
    # confidence in [0, 1] (None: written before verdicts had one), and for an `unknown` the lines to look at
    evidence_kinds: tuple[str, ...] = ()
    confidence: float | None = None
    suspicious: tuple[tuple[int, str, str], ...] = ()  # (line, text, why)

    def strength_lines(self) -> list[str]:
        """What the class rests on and how sure it is, then for an `unknown` the lines to look at:
        plain text for the crash panel (log text inside is the caller's to sanitise)."""
        if self.confidence is None and not self.evidence_kinds:
            return []
        sure = f"confidence {self.confidence:.2f}" if self.confidence is not None else "confidence N/A"
        out = [f"{sure} · rests on: {', '.join(self.evidence_kinds) or 'nothing'}"]
        for line, text, why in self.suspicious:
            out.append(f"look at line {line}: {why} — {text[:160]}")
        return out

    @property
    def clock(self) -> str:
        """HH:MM:SS of the death, or N/A."""
        return self.time[11:19] if len(self.time) >= 19 else UNKNOWN

    def to_doc(self) -> dict[str, Any]:
        return {"id": self.id, "config": self.config, "launch": self.launch, "flags": self.flags,
                "time": self.time, "started_at": self.started_at, "exit_status": self.exit_status,
                "class": self.cls, "line": self.line, "summary": self.summary, "excerpt": list(self.excerpt),
                "server": self.server, "log": self.log, "sweep": self.sweep, "sources": list(self.sources),
                "evidence_kinds": list(self.evidence_kinds), "confidence": self.confidence,
                "suspicious": [{"line": line, "text": text, "why": why} for line, text, why in self.suspicious]}

    @classmethod
    def from_doc(cls, doc: dict[str, Any], fallback_id: str) -> "CrashRecord":
        def text(key: str) -> str | None:
            value = doc.get(key)
            return value if isinstance(value, str) else None

        line = doc.get("line")
        status = doc.get("exit_status")
        excerpt = doc.get("excerpt")
        sources = doc.get("sources")
        flags = doc.get("flags")
        kinds = doc.get("evidence_kinds")
        confidence = doc.get("confidence")
        return cls(id=text("id") or fallback_id, config=text("config"), cls=crash_class(text("class")),
                   time=text("time") or "", launch=text("launch"),
                   line=line if isinstance(line, int) and not isinstance(line, bool) else None,
                   summary=text("summary") or "",
                   excerpt=tuple(str(x) for x in excerpt) if isinstance(excerpt, list) else (),
                   exit_status=status if isinstance(status, int) and not isinstance(status, bool) else None,
                   flags=flags if isinstance(flags, dict) else {},
                   server=text("server"), log=text("log"), sweep=text("sweep"), started_at=text("started_at"),
                   sources=tuple(str(x) for x in sources if isinstance(x, str))[:8] if isinstance(sources, list) else (),
                   evidence_kinds=tuple(str(x) for x in kinds if isinstance(x, str))[:8] if isinstance(kinds, list)
                   else (),
                   confidence=float(confidence) if isinstance(confidence, (int, float))
                   and not isinstance(confidence, bool) and 0 <= confidence <= 1 else None,
                   suspicious=_suspicious(doc.get("suspicious")))


def _suspicious(saved: Any) -> tuple[tuple[int, str, str], ...]:
    """The saved lines to look at, each (line, text, why); anything malformed is left out."""
    if not isinstance(saved, list):
        return ()
    out = []
    for entry in saved[:3]:
        if isinstance(entry, dict) and isinstance(entry.get("line"), int) and not isinstance(entry.get("line"), bool):
            out.append((entry["line"], str(entry.get("text", ""))[:400], str(entry.get("why", ""))[:200]))
    return tuple(out)


def crash_class(saved: str | None) -> str:
    """The class of a saved crash as it reads today: a crash is never `healthy` (records written
    before the process's end was weighed could say so), a missing class is `unknown`, and a
    class renamed since (`cuda-oom`) reads under its new name (`oom`)."""
    from ..servers.triage.rules import current_class

    if not saved or saved == "healthy":
        return "unknown"
    return current_class(saved)


def crashes_dir(profile: str) -> Path:
    return paths.profile_data_dir(profile) / "crashes"


def read_crashes(profile: str) -> Scan[CrashRecord]:
    """Every crash record of the profile, newest first; unreadable files named."""
    found = scan_files(json_files(crashes_dir(profile)), KIND,
                       lambda path: CrashRecord.from_doc(_parse(path), path.stem))
    found.records.sort(key=lambda c: (c.time, c.id), reverse=True)
    return found


def crash_of_launch(profile: str, launch_id: str) -> CrashRecord | None:
    return next((c for c in read_crashes(profile).records if c.launch == launch_id or c.id == launch_id), None)


def write_crash(profile: str, launch: Launch, verdict: TriageResult, sweep: str | None = None) -> CrashRecord:
    """The crash record of `launch` (a LaunchRecord): written by the first caller, read back by the rest."""
    when = launch.stopped_at or time.time()
    crash = CrashRecord(
        id=launch.id, config=launch.config, cls=crash_class(verdict.cls),
        time=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(when)), launch=launch.id,
        line=verdict.line, summary=verdict.summary or "", excerpt=tuple(verdict.excerpt or ()),
        exit_status=launch.exit_status, flags=dict(launch.flags or {}), server=verdict.server, log=launch.log,
        sources=tuple(getattr(verdict, "sources", ()) or ()),
        evidence_kinds=tuple(getattr(verdict, "evidence_kinds", ()) or ()),
        confidence=round(verdict.overall_confidence, 2) if hasattr(verdict, "overall_confidence") else None,
        suspicious=tuple((int(s["line"]), str(s["text"]), str(s["why"])) for s in getattr(verdict, "suspicious", ())),
        sweep=sweep, started_at=time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(launch.started_at)))
    from profiles.atomic import private_dirs

    folder = crashes_dir(profile)
    private_dirs(folder)   # 0700: crash excerpts can hold prompts and secrets
    target = folder / f"{crash.id}.json"
    fd, tmp = tempfile.mkstemp(dir=folder, prefix=".crash-", suffix=".tmp")
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(crash.to_doc(), indent=2) + "\n")
            fh.flush()
            os.fsync(fh.fileno())
        os.chmod(tmp, 0o600)
        try:
            os.link(tmp, target)  # fails if another writer got there first
        except FileExistsError:
            existing = _read_one(target)
            return existing if existing is not None else crash
    finally:
        with_suppressed_unlink(tmp)
    return crash


def _parse(path: Path) -> dict[str, Any]:
    """One record file as a JSON object: a regular file under the cap, UTF-8 JSON, a table."""
    doc = read_json(path, MAX_RECORD_BYTES)
    if not isinstance(doc, dict):
        raise ValueError("not a JSON object")
    return doc


def _read_one(path: Path) -> CrashRecord | None:
    try:
        return CrashRecord.from_doc(_parse(path), path.stem)
    except (OSError, ValueError, RecursionError):   # FileRefused is a ValueError
        return None


def with_suppressed_unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass
