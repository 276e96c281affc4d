"""A run's timeline: what the client saw, what the server said, what the GPUs did, on one clock.

Written beside the run as `<run id>.timeline.json` by the load generator (the
one writer, `TimelineWriter`), read by `read_timeline` for `bench show`, the
report and the Bench tab. Every point's first value is seconds on the
sweep's monotonic clock since the run began; `anchor` ties that clock to
wall-clock time once (`wall = anchor.wall + t`), so a point is never placed
by a wall clock that may step.

Bounded: a series holds at most `cap` points. When it fills, every other
point is dropped and from then on only every `stride`-th point is kept, so a
long sweep keeps an even, coarser picture of the whole run instead of its
first hour. The `gpu` series holds one point per GPU per sample, and a sample's
points are kept or dropped together. Marks (log events, level boundaries) are
few and capped alone.
"""
from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

from profiles.atomic import StateFileError, write_atomic

from ..safe_text import clean_line

VERSION = 1
CAP = 10_000        # points per series
MARK_CAP = 2_000    # marks per run
SUFFIX = ".timeline.json"

# the series and the fields of their points (after the time)
FIELDS: dict[str, tuple[str, ...]] = {
    # one row per request: send, first token and last token (all on the run's clock), tokens, ok, level
    "requests": ("first_token", "end", "output_tokens", "ok", "level"),
    # the client's per-second tick: output tokens that second, requests in flight
    "client": ("level", "output_tok_s", "in_flight"),
    # the server's /metrics, at the poller's pace: `t` when the scrape was sent, `answered` when its
    # answer came back (the server read its gauges somewhere between the two)
    "server": ("answered", "running", "waiting", "kv_cache", "preemptions", "gen_tps"),
    # the GPUs the server holds, at the GPU sampler's pace
    "gpu": ("index", "util", "memory_used_mib", "power_w", "power_limit_w", "sm_clock_mhz", "sm_clock_max_mhz",
            "throttle"),
}


def timeline_path(run_path: str | Path) -> Path:
    """The timeline beside a run document (`runs/<id>.json` -> `runs/<id>.timeline.json`)."""
    path = Path(run_path)
    return path.with_name(path.name.removesuffix(".json") + SUFFIX)


class Series:
    """One bounded series: appends are O(1); at the cap it halves itself and keeps every stride-th point."""

    __slots__ = ("points", "cap", "stride", "_skip")

    def __init__(self, cap: int = CAP):
        self.points: list[list[Any]] = []
        self.cap = cap
        self.stride = 1
        self._skip = 0

    def add(self, point: list[Any]) -> None:
        if self._skip:
            self._skip -= 1
            return
        self._skip = self.stride - 1
        self.points.append(point)
        if len(self.points) >= self.cap:
            self.points = self.points[::2]
            self.stride *= 2

    def add_group(self, points: list[list[Any]]) -> None:
        """Points taken at one moment (one per GPU of a sample), kept or dropped together: at the cap every
        other moment goes, never half of one (a sum over a sample's GPUs stays a sum over all of them)."""
        if not points:
            return
        if self._skip:
            self._skip -= 1
            return
        self._skip = self.stride - 1
        self.points.extend(points)
        if len(self.points) >= self.cap:
            moments = sorted({p[0] for p in self.points})
            kept = set(moments[::2])
            self.points = [p for p in self.points if p[0] in kept]
            self.stride *= 2
            if len(moments) % 2:   # the moment just added is kept: the next is a whole new stride on
                self._skip = self.stride - 1


class TimelineWriter:
    """The load generator's recorder: `now()` is the run's clock; `save()` writes the file atomically."""

    def __init__(self, path: Path | None, clock: Callable[[], float] = time.perf_counter, cap: int = CAP):
        self.path = path
        self.clock = clock
        self.mono0: float = clock()
        self.wall0 = time.time()
        self.series = {name: Series(cap) for name in FIELDS}
        self.marks: list[dict[str, Any]] = []
        self.notes: dict[str, list[str]] = {}   # level index -> inferences (console.bench.inferences)
        self.meta: dict[str, Any] = {}
        self.failed_levels: set[int] = set()

    def t(self, mono: float) -> float:
        """A monotonic reading of the sweep's clock as seconds since the run began."""
        return round(mono - self.mono0, 4)

    def now(self) -> float:
        return self.t(self.clock())

    def t_of_wall(self, wall: float) -> float:
        """A wall-clock time from this host (a failure's time, a crash record's) on the run's clock."""
        return round(wall - self.wall0, 4)

    def add(self, series: str, t: float, *values: Any) -> None:
        self.series[series].add([t, *values])

    def add_group(self, series: str, t: float, rows: list[tuple[Any, ...]]) -> None:
        """Several points at one moment (a GPU sample's rows), thinned together (Series.add_group)."""
        self.series[series].add_group([[t, *values] for values in rows])

    def mark(self, t: float, kind: str, text: str, level: int | None = None) -> None:
        if len(self.marks) < MARK_CAP:
            # a mark's text is a server's (its log, its errors): cleaned once, here
            self.marks.append({"t": t, "kind": kind, "text": clean_line(text)[:500], "level": level})

    def to_json(self) -> dict[str, Any]:
        return {"version": VERSION, "anchor": {"wall": self.wall0, "mono": 0.0},
                "fields": {name: ["t", *f] for name, f in FIELDS.items()},
                "series": {name: {"stride": s.stride, "points": s.points} for name, s in self.series.items()},
                "marks": self.marks, "notes": self.notes, "meta": self.meta}

    def save(self, redact: Callable[[str], str] | None = None) -> None:
        if self.path is None:
            return
        text = json.dumps(self.to_json(), separators=(",", ":"), default=str)
        write_atomic(self.path, redact(text) if redact is not None else text)


@dataclass
class Timeline:
    """A saved timeline, read back: `rows(name)` gives each point as a dict of its fields."""

    path: Path
    wall0: float
    series: dict[str, list[list[Any]]]
    strides: dict[str, int]
    marks: list[dict[str, Any]]
    notes: dict[str, list[str]]
    meta: dict[str, Any] = field(default_factory=dict)

    def rows(self, name: str) -> list[dict[str, Any]]:
        names = ("t", *FIELDS.get(name, ()))
        return [dict(zip(names, p)) for p in self.series.get(name, [])]

    def wall(self, t: float) -> float:
        return self.wall0 + t

    def to_json(self) -> dict[str, Any]:
        return {"anchor": {"wall": self.wall0}, "fields": {n: ["t", *f] for n, f in FIELDS.items()},
                "series": {n: {"stride": self.strides.get(n, 1), "points": p} for n, p in self.series.items()},
                "marks": self.marks, "notes": self.notes, "meta": self.meta}


def _points(raw: Any, width: int) -> list[list[Any]]:
    """Points that are lists starting with a number, of the series' width; anything else dropped."""
    if not isinstance(raw, list):
        return []
    return [p for p in raw if isinstance(p, list) and len(p) == width and isinstance(p[0], (int, float))
            and not isinstance(p[0], bool)]


def read_timeline(run_path: str | Path) -> Timeline | None:
    """The timeline beside a run, or None when the run has none (older runs); StateFileError if unreadable."""
    path = timeline_path(run_path)
    try:
        doc = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        return None
    except (OSError, ValueError) as exc:
        raise StateFileError(path, f"not a timeline ({str(exc).splitlines()[0][:120]})") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("series"), dict):
        raise StateFileError(path, "not a timeline (no series)")
    def table(key: str) -> dict[str, Any]:
        value = doc.get(key)
        return value if isinstance(value, dict) else {}

    anchor, saved = table("anchor"), table("series")
    wall0 = anchor.get("wall")
    series: dict[str, list[list[Any]]] = {}
    strides: dict[str, int] = {}
    for name, fields in FIELDS.items():
        raw = saved.get(name)
        raw = raw if isinstance(raw, dict) else {}
        series[name] = _points(raw.get("points"), len(fields) + 1)
        stride = raw.get("stride")
        strides[name] = stride if isinstance(stride, int) and stride >= 1 else 1
    raw_marks = doc.get("marks")
    marks = [{**m, "text": clean_line(m["text"])[:500]} for m in (raw_marks if isinstance(raw_marks, list) else [])
             if isinstance(m, dict) and isinstance(m.get("t"), (int, float)) and isinstance(m.get("text"), str)]
    notes = {str(k): [n for n in v if isinstance(n, str)] for k, v in table("notes").items() if isinstance(v, list)}
    return Timeline(path=path, wall0=float(wall0) if isinstance(wall0, (int, float)) else 0.0, series=series,
                    strides=strides, marks=marks, notes=notes, meta=table("meta"))
