"""A saved timeline as a chart reads it: named series of (t, value) on the run's clock, and its marks.

What the Bench tab's timeline view and the report's SVG both draw, computed
once here from `console.store.timeline.Timeline`. A value the run did not
record (no /metrics, no GPU sample, a field that read N/A) is left out of its
series, never drawn as 0; a series with no point is listed as not recorded.
The views pair two series on one time axis (left and right scales), the most
telling first: what the client got against what it asked for, then the
server's queue against its KV cache, then the GPUs' power.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from console.store.timeline import Timeline

# the marks a chart shows, and the short label each one gets there
MARK_LABELS = {"level-start": "", "first failure": "first failure", "server died": "died",
               "server hung": "hung", "decisive line": "decisive line"}


@dataclass
class Line:
    """One series: its name, its unit and its points, in time order."""
    name: str
    unit: str
    points: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Mark:
    t: float
    kind: str
    label: str       # what the chart writes at the mark ("c=64", "died")
    text: str        # the whole line (already cleaned at the store)


@dataclass
class TimelineData:
    run_id: str
    span: float                      # seconds from the run's start to its last point or mark
    lines: dict[str, Line]
    marks: list[Mark]
    views: list[tuple[str, str | None]]   # (left series, right series or None), the most telling first

    def missing(self) -> list[str]:
        return [name for name, line in self.lines.items() if not line.points]


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def _series(tl: Timeline, name: str, key: str, scale: float = 1.0) -> list[tuple[float, float]]:
    return [(float(r["t"]), v * scale) for r in tl.rows(name) if (v := _num(r.get(key))) is not None]


def _gpu_power(tl: Timeline) -> list[tuple[float, float]]:
    """The server's GPUs' summed power per sample (a sample with any GPU's power N/A is left out)."""
    by_t: dict[float, list[float | None]] = {}
    for r in tl.rows("gpu"):
        by_t.setdefault(float(r["t"]), []).append(_num(r.get("power_w")))
    return [(t, sum(w for w in ws if w is not None)) for t, ws in sorted(by_t.items()) if None not in ws]


def _level_label(text: str) -> str:
    """"level c=64 starts" -> "c=64"; "level 64 starts" -> "c=64"."""
    words = text.split()
    label = words[1] if len(words) >= 2 else text
    return label if "=" in label else f"c={label}"


def chart_data(tl: Timeline, run_id: str = "") -> TimelineData:
    lines = {
        "tok/s": Line("tok/s", "output tok/s (client)", _series(tl, "client", "output_tok_s")),
        "in flight": Line("in flight", "requests in flight (client)", _series(tl, "client", "in_flight")),
        "waiting": Line("waiting", "requests waiting (server)", _series(tl, "server", "waiting")),
        "KV %": Line("KV %", "KV cache use % (server)", _series(tl, "server", "kv_cache", 100.0)),
        "running": Line("running", "requests running (server)", _series(tl, "server", "running")),
        "GPU W": Line("GPU W", "GPU power W (the server's GPUs, summed)", _gpu_power(tl)),
    }
    marks = [Mark(float(m["t"]), m["kind"], _level_label(m["text"]) if m["kind"] == "level-start"
                  else MARK_LABELS[m["kind"]], m["text"])
             for m in tl.marks if m.get("kind") in MARK_LABELS]
    ends = [p[-1][0] for p in (line.points for line in lines.values()) if p] + [m.t for m in marks]
    views = [("tok/s", "in flight"), ("KV %", "waiting"), ("GPU W", "tok/s"), ("running", "waiting")]
    return TimelineData(run_id=run_id, span=max(ends, default=0.0), lines=lines, marks=marks, views=views)
