"""What each metric can physically read: a value outside its range is a broken exporter, shown N/A.

An exporter that sends `1e308` for a temperature or `-1` for a utilisation
is wrong, not reporting a record: printing 309 digits or "-1%" would be a
number that is not true. The fleet view and the bench's server view both
pass values through `physical` before they show them.
"""
from __future__ import annotations

import math

# (lowest, highest), inclusive. Generous: the point is to catch nonsense, not to judge hardware.
RANGES: dict[str, tuple[float, float]] = {
    # GPU fields (console.gpus.model.GPU attributes)
    "util_gpu_pct": (0, 100),
    "util_mem_pct": (0, 100),
    "memory_used_mib": (0, 1 << 24),          # 16 TiB
    "memory_total_mib": (0, 1 << 24),
    "temperature_c": (-40, 200),
    "power_draw_w": (0, 20_000),
    "power_limit_w": (0, 20_000),
    "sm_clock_mhz": (0, 20_000),
    "xid": (0, 1 << 20),
    # an inference server's own gauges and rates
    "running": (0, 1e7),
    "waiting": (0, 1e9),
    "queued": (0, 1e9),
    "kv_cache": (0, 1),                      # a fraction
    "gen_tok_s": (0, 1e9),
    "gen_tps": (0, 1e9),
    "gen_tokens_total": (0, 1e18),
    "preemptions": (0, 1e18),                # a counter since the server started
    "latency_ms": (0, 1e8),                  # a mean TTFT or ITL: over a day is no mean
}


def physical(name: str, value: float | None) -> float | None:
    """`value` when it is a finite number inside `name`'s range, else None (unknown)."""
    if value is None or isinstance(value, bool) or not isinstance(value, (int, float)):
        return None
    if not math.isfinite(value):
        return None
    low, high = RANGES.get(name, (-math.inf, math.inf))
    return value if low <= value <= high else None
