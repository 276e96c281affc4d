"""Derived per-GPU flags: what the numbers mean, not just what they are.

`stale` is the one that matters most: a crashed server can leave a driver
counter reading ~100% utilisation on a GPU with no memory in use and no
process on it. One such sample can be a blip, so it takes several in a row.
Flags that need "no process" are only raised when the process list is known.
"""
from __future__ import annotations

from .model import GPU, Snapshot, known

STALE_UTIL_PCT = 90
STALE_SAMPLES = 3
IDLE_UTIL_PCT = 5
BUSY_UTIL_PCT = 20
HOT_C = 85
ORPHAN_MEMORY_MIB = 1024

STALE = "stale"
XID = "xid"                 # raised as "xid-<code>", the last XID the GPU reported
ORPHAN = "orphan-memory"
HOT = "hot"
THROTTLED = "throttled"
BUSY = "busy"
IDLE = "idle"
ORDER = (STALE, XID, ORPHAN, HOT, THROTTLED, BUSY, IDLE)

# clocks_event_reasons bits that mean the GPU is held back (not idle, not app clocks).
THROTTLE_BITS = {
    0x4: "power cap",
    0x8: "hw slowdown",
    0x20: "sw thermal",
    0x40: "hw thermal",
    0x80: "power brake",
}


def almost_no_memory(gpu: GPU) -> bool:
    if not known(gpu.memory_used_mib):
        return False
    total = gpu.memory_total_mib if known(gpu.memory_total_mib) else 0
    return gpu.memory_used_mib <= max(256, 0.01 * total)


def throttle_reasons(mask) -> list[str]:
    if not known(mask):
        return []
    return [name for bit, name in THROTTLE_BITS.items() if mask & bit]


def stale_candidate(gpu: GPU, snapshot: Snapshot) -> bool:
    """One sample of the stale pattern: busy counter, empty memory, no process."""
    # DCGM lists no processes; ~0 MiB in use already rules out a live CUDA context there.
    no_process = (snapshot.processes_known and not snapshot.processes_on(gpu)) or snapshot.source == "dcgm"
    return (known(gpu.util_gpu_pct) and gpu.util_gpu_pct >= STALE_UTIL_PCT
            and almost_no_memory(gpu) and no_process)


class FlagTracker:
    """Keeps the per-GPU streaks that span samples; `apply` sets each GPU's flags."""

    def __init__(self, stale_after: int = STALE_SAMPLES):
        self.stale_after = stale_after
        self._streak: dict = {}

    def apply(self, snapshot: Snapshot) -> Snapshot:
        keys = set()
        for gpu in snapshot.gpus:
            key = gpu.key
            keys.add(key)
            streak = self._streak.get(key, 0) + 1 if stale_candidate(gpu, snapshot) else 0
            self._streak[key] = streak
            gpu.flags = flags_for(gpu, snapshot, streak >= self.stale_after)
            gpu.throttle_reasons = throttle_reasons(gpu.throttle_mask)
        for gone in set(self._streak) - keys:
            del self._streak[gone]
        return snapshot

    def building(self) -> bool:
        """Whether a GPU is part-way to the stale flag (a streak begun, not yet long enough)."""
        return any(0 < streak < self.stale_after for streak in self._streak.values())


def flags_for(gpu: GPU, snapshot: Snapshot, stale: bool) -> list[str]:
    out: list[str] = []
    if stale:
        out.append(STALE)
    if known(gpu.xid) and gpu.xid > 0:
        out.append(f"{XID}-{gpu.xid}")
    util = gpu.util_gpu_pct
    if (snapshot.processes_known and known(gpu.memory_used_mib)
            and gpu.memory_used_mib >= ORPHAN_MEMORY_MIB and not snapshot.processes_on(gpu)):
        out.append(ORPHAN)
    if known(gpu.temperature_c) and gpu.temperature_c >= HOT_C:
        out.append(HOT)
    if throttle_reasons(gpu.throttle_mask):
        out.append(THROTTLED)
    if known(util) and not stale:
        if util >= BUSY_UTIL_PCT:
            out.append(BUSY)
        elif util < IDLE_UTIL_PCT:
            out.append(IDLE)
    return out


def stale_warning(snapshot: Snapshot) -> str | None:
    """The sentence the pane shows when counters are stale."""
    stale = [g for g in snapshot.gpus if STALE in g.flags]
    if not stale:
        return None
    worst = min(g.util_gpu_pct for g in stale)
    reading = "100%" if worst >= 99 else f"≥{int(worst)}%"
    n = len(stale)
    what = "GPU reads" if n == 1 else "GPUs read"
    return (f"⚠ {n} {what} {reading} with ~0 MiB and no process: "
            "a stale counter after a crash, not work")
