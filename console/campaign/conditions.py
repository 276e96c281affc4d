"""The host's conditions when a cell was measured: load average, GPU clocks and temperatures, GPU processes.

Drift between cells is what makes a campaign lie: a neighbour's job, a hot
GPU running at lower clocks. Each visit records what it could read just
before its sweep; the answer says when the cells saw different conditions.
"""
from __future__ import annotations

import math

LOAD_SPREAD = 1.0          # load averages further apart than this (per host) are different conditions
CLOCK_SPREAD_PCT = 10.0    # SM clocks further apart than this
TEMP_SPREAD_C = 15.0       # GPU temperatures further apart than this


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


def parse_loadavg(text: str) -> float | None:
    """The 1-minute load average from /proc/loadavg's text."""
    try:
        value = float(text.split()[0])
    except (IndexError, ValueError):
        return None
    return value if math.isfinite(value) and value >= 0 else None


def from_snapshot(snap) -> dict:
    """What a GPU snapshot says about clocks, temperatures and processes (nothing when unreadable)."""
    if getattr(snap, "state", None) != "ok":
        return {}
    clocks = [_num(g.sm_clock_mhz) for g in snap.gpus]
    temps = [_num(g.temperature_c) for g in snap.gpus]
    out: dict = {}
    if any(c is not None for c in clocks):
        out["sm_clock_mhz"] = min(c for c in clocks if c is not None)
    if any(t is not None for t in temps):
        out["temperature_c"] = max(t for t in temps if t is not None)
    if snap.processes_known:
        out["gpu_processes"] = len(snap.processes)
    return out


async def sample(session, profile) -> dict:
    """The host's conditions now; a figure that can't be read is left out, never guessed."""
    from ..gpus import sample_once
    from ..hosts import HostError

    out: dict = {}
    try:
        res = await session.host.run(["cat", "/proc/loadavg"], timeout=10)
        load = parse_loadavg(res.stdout) if res.ok else None
        if load is not None:
            out["load1"] = load
    except HostError:
        pass
    try:
        snap = await sample_once(session.host, smi_command=profile.gpu.smi_command or None, samples=1,
                                 timeout_s=10, simulated=profile.ui.simulated)
        out.update(from_snapshot(snap))
    except HostError:
        pass
    return out


def spread_note(conditions: list) -> str:
    """'' when the visits saw alike conditions, else one line saying how they differed."""
    docs = [c for c in conditions if isinstance(c, dict)]
    parts = []

    def values(key: str) -> list[float]:
        return [v for v in (_num(d.get(key)) for d in docs) if v is not None]

    load = values("load1")
    if len(load) > 1 and max(load) - min(load) > LOAD_SPREAD:
        parts.append(f"load average {min(load):.2f} … {max(load):.2f}")
    clocks = values("sm_clock_mhz")
    if len(clocks) > 1 and max(clocks) > 0 and (max(clocks) - min(clocks)) / max(clocks) * 100 > CLOCK_SPREAD_PCT:
        parts.append(f"SM clock {min(clocks):.0f} … {max(clocks):.0f} MHz")
    temps = values("temperature_c")
    if len(temps) > 1 and max(temps) - min(temps) > TEMP_SPREAD_C:
        parts.append(f"GPU temperature {min(temps):.0f} … {max(temps):.0f} °C")
    procs = values("gpu_processes")
    if len(procs) > 1 and max(procs) != min(procs):
        parts.append(f"{min(procs):.0f} … {max(procs):.0f} processes on the GPUs")
    if not parts:
        return ""
    return "cells were measured under different host conditions (" + "; ".join(parts) + \
        "): the repeats are interleaved so drift hits every config alike, and the CIs carry it"
