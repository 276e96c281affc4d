"""Tokens per joule: the power the server's GPUs drew during a level, integrated, against its output tokens.

The GPUs' power is sampled all the time the sweep runs, by the sweep's one
GPU sampler (console.bench.gpu_watch: NVML locally, nvidia-smi over SSH, the
simulator's nvidia-smi in the demo), which also feeds the run's timeline. The GPUs counted are those the server holds, i.e. whose memory in use is
above the idle mark (a campaign waits for every GPU to go idle between
cells, so no other server's GPUs are counted). A level's energy is the
trapezoid integral of their summed power over the level's span; its tokens per
joule are its output tokens over that. A sample with a GPU's power unknown
(N/A), no sample in the span, or no GPU at all (a CPU host) makes the figure
unknown, never 0; the demo's figures are marked SIMULATED.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_SAMPLES = 36_000        # an hour of one-second samples: the trace is bounded however long the sweep
MIN_SPAN_SAMPLES = 2        # fewer samples inside a level than this: the edges decide too much, unknown


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


@dataclass
class PowerTrace:
    """(monotonic time, summed watts of the server's GPUs or None) in the order sampled."""
    idle_mib: float = 1024.0
    points: list[tuple[float, float | None]] = field(default_factory=list)
    gpus: int = 0              # the most GPUs seen held at once
    why_unknown: str = ""      # the last reason a sample gave no power

    def add(self, at: float, snapshot: Any) -> None:
        """One snapshot (console.gpus.model.Snapshot): the power of the GPUs holding memory, summed."""
        if len(self.points) >= MAX_SAMPLES:
            del self.points[: MAX_SAMPLES // 10]
        if getattr(snapshot, "state", None) != "ok" or getattr(snapshot, "sample_stale", False):
            self.why_unknown = f"no GPU sample ({getattr(snapshot, 'state', 'none')})"
            self.points.append((at, None))
            return
        held = [g for g in snapshot.gpus if (_num(g.memory_used_mib) or 0.0) > self.idle_mib]
        watts = [_num(g.power_draw_w) for g in held]
        if not held or any(w is None for w in watts):
            self.why_unknown = "no GPU holds the server" if not held else "a GPU's power reads N/A"
            self.points.append((at, None))
            return
        self.gpus = max(self.gpus, len(held))
        self.points.append((at, sum(w for w in watts if w is not None)))

    def integrate(self, start: float, end: float) -> tuple[float, int] | None:
        """Joules between start and end (trapezoids, the edges held at the nearest sample) and the samples
        inside; None when a sample inside is unknown or fewer than MIN_SPAN_SAMPLES fall inside."""
        inside = [(t, w) for t, w in self.points if start <= t <= end]
        if len(inside) < MIN_SPAN_SAMPLES or any(w is None for _t, w in inside) or end <= start:
            return None
        pts = [(t, float(w)) for t, w in inside if w is not None]
        pts = [(start, pts[0][1]), *pts, (end, pts[-1][1])]
        joules = sum((t1 - t0) * (w0 + w1) / 2 for (t0, w0), (t1, w1) in zip(pts, pts[1:]))
        return joules, len(inside)


def level_energy(trace: PowerTrace | None, start: float, end: float, output_tokens: Any,
                 simulated: bool) -> dict:
    """A level's energy figures: output tokens per joule and average power, or why they are unknown."""
    if trace is None:
        return {"tok_per_j": None, "avg_power_w": None, "joules": None, "source": None,
                "why": "power not sampled"}
    found = trace.integrate(start, end)
    tokens = _num(output_tokens)
    if found is None or tokens is None:
        why = trace.why_unknown or "too few power samples in the level"
        return {"tok_per_j": None, "avg_power_w": None, "joules": None, "source": None,
                "why": why if found is None else "output tokens unknown"}
    joules, samples = found
    return {"tok_per_j": round(tokens / joules, 6) if joules > 0 else None,
            "avg_power_w": round(joules / (end - start), 2), "joules": round(joules, 2),
            "gpus": trace.gpus, "samples": samples, "source": "SIMULATED" if simulated else "measured"}
