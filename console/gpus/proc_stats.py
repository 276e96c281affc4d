"""CPU% and resident memory of the GPU processes, read with `ps` on their host.

nvidia-smi names a process's GPU memory only; an operator beside nvitop also
wants its CPU and host memory (a tokenizer pegging a core, a server whose RSS
grows). One `ps -o pid=,times=,rss= -p PIDS` per process-list read, on the same
host connection the sampler uses. `times` is the process's whole CPU time in
seconds, so the CPU% is the change between two reads over the time between
them: the load now, not since the process started (ps's own %CPU). A process
seen once has no CPU% yet; a host whose ps can't say (no such column, an
error) leaves both unknown, never 0.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, replace
from typing import Sequence

from .model import NA, GPUProcess

MAX_PIDS = 256  # the command line stays short whatever the list holds


def ps_argv(pids: Sequence[int]) -> list[str]:
    return ["ps", "-o", "pid=,times=,rss=", "-p", ",".join(str(p) for p in sorted(set(pids))[:MAX_PIDS])]


def parse_ps(text: str) -> dict[int, tuple[int, int]]:
    """pid → (CPU seconds, RSS KiB) for each whole line; anything else is skipped."""
    out: dict[int, tuple[int, int]] = {}
    for line in text.splitlines()[:MAX_PIDS]:
        parts = line.split()
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            continue
        out[int(parts[0])] = (int(parts[1]), int(parts[2]))
    return out


@dataclass
class _Seen:
    cpu_s: int
    at: float


class ProcStats:
    """Keeps each pid's last CPU-time reading, so that the next one gives a CPU% (one per sampler)."""

    def __init__(self) -> None:
        self._seen: dict[int, _Seen] = {}

    def apply(self, processes: list[GPUProcess], read: dict[int, tuple[int, int]] | None,
              now: float | None = None) -> list[GPUProcess]:
        """The processes with `cpu_percent` and `rss_mib` from `read` (None: ps could not say)."""
        now = time.monotonic() if now is None else now
        if read is None:
            self._seen.clear()
            return [replace(p, cpu_percent=NA, rss_mib=NA) for p in processes]
        out = []
        for p in processes:
            got = read.get(p.pid) if isinstance(p.pid, int) else None
            if got is None:
                out.append(replace(p, cpu_percent=NA, rss_mib=NA))
                continue
            cpu_s, rss_kib = got
            before = self._seen.get(p.pid)
            cpu = NA
            if before is not None and now > before.at and cpu_s >= before.cpu_s:
                cpu = round(100.0 * (cpu_s - before.cpu_s) / (now - before.at), 1)
            out.append(replace(p, cpu_percent=cpu, rss_mib=round(rss_kib / 1024, 1)))
        self._seen = {pid: _Seen(v[0], now) for pid, v in read.items()}
        return out


# The process list's orders, cycled by one key on the GPUs tab: biggest first, except pid and name.
PROCESS_SORTS = ("memory", "cpu", "rss", "pid", "name")


def sort_processes(processes: Sequence[GPUProcess], by: str) -> list[GPUProcess]:
    """The list in the order `by` names; a process whose value is unknown goes last, in list order."""
    field, biggest_first = {"memory": ("used_memory_mib", True), "cpu": ("cpu_percent", True),
                            "rss": ("rss_mib", True), "pid": ("pid", False), "name": ("name", False)}[by]

    def value(p: GPUProcess):
        v = getattr(p, field)
        return v if isinstance(v, (int, float, str)) and not isinstance(v, bool) else None

    known_ = [p for p in processes if value(p) is not None]
    unknown = [p for p in processes if value(p) is None]
    return sorted(known_, key=lambda p: value(p), reverse=biggest_first) + unknown
