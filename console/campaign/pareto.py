"""The throughput/interactivity frontier: per config, (output tok/s per GPU, tok/s per user) across its levels.

Each point also carries its output tokens per joule (`z`, a third axis; None where power is unknown),
which the tab and the report print beside it; the frontier itself is the two speed axes.

More streams buy throughput and cost each user speed; no single number says
which config is best for every operator. A point is on the frontier when no
other config's point is at least as good on both axes and better on one.
The SLO on TPOT is a floor on tok/s per user (1000 / TPOT ms), drawn as a line.
Pure data: the tab draws it with plotext, the report as an SVG (`svg`).
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass
class Point:
    config: str
    concurrency: int
    x: float                   # output tok/s per GPU (per server when the GPU count is unknown)
    y: float                   # output tok/s per user: the level's rate over its streams
    x_ci: list | None = None
    y_ci: list | None = None
    frontier: bool = False
    z: float | None = None     # output tokens per joule (None: power unknown); not part of the 2-D frontier
    z_source: str | None = None   # "measured" or "SIMULATED"

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Frontier:
    points: list[Point] = field(default_factory=list)
    x_label: str = "output tok/s per GPU"
    y_label: str = "output tok/s per user"
    slo_lines: list[dict] = field(default_factory=list)   # {"axis": "y", "value": ..., "label": ...}
    z_label: str = "output tokens per joule"

    @property
    def on_frontier(self) -> list[Point]:
        return sorted((p for p in self.points if p.frontier), key=lambda p: p.x)

    def configs(self) -> list[str]:
        return list(dict.fromkeys(p.config for p in self.points))

    def to_json(self) -> dict:
        return {"x_label": self.x_label, "y_label": self.y_label, "z_label": self.z_label,
                "slo_lines": self.slo_lines,
                "points": [p.to_json() for p in self.points],
                "frontier": [{"config": p.config, "concurrency": p.concurrency} for p in self.on_frontier]}


def gpus_of(roof) -> int | None:
    """GPUs one server uses, from the profile's roofline (its tensor-parallel size); None when unknown."""
    tp = getattr(getattr(roof, "setup", None), "tp", None)
    return tp if isinstance(tp, int) and tp > 0 else None


def _scaled(ci, by: float):
    return [ci[0] / by, ci[1] / by] if ci and ci[0] is not None else None


def frontier(comparison, gpus: int | None = None, slo: dict | None = None) -> Frontier:
    """The points of every level each config finished in every repeat, and which are on the frontier."""
    per = gpus if gpus and gpus > 0 else 1
    out = Frontier(x_label="output tok/s per GPU" if gpus else "output tok/s per server (GPU count unknown)")
    for r in comparison.results:
        for lv in r.levels:
            c, tps = lv.get("concurrency"), lv.get("output_throughput")
            if not lv.get("finished") or not c or tps is None:
                continue
            ci = ((lv.get("stats") or {}).get("tps") or {}).get("ci")
            energy = lv.get("energy") if isinstance(lv.get("energy"), dict) else {}
            out.points.append(Point(r.cell, c, tps / per, tps / c, _scaled(ci, per), _scaled(ci, c),
                                    z=energy.get("tok_per_j"), z_source=energy.get("source")))
    for p in out.points:
        p.frontier = not any(q is not p and q.x >= p.x and q.y >= p.y and (q.x > p.x or q.y > p.y)
                             for q in out.points)
    tpot = (slo or {}).get("tpot_ms")
    if tpot:
        out.slo_lines.append({"axis": "y", "value": 1000.0 / tpot, "label": f"TPOT SLO {tpot:g} ms"})
    return out
