"""The state file shared by the simulated server and the `nvidia-smi` stand-in.

The server rewrites `<state-dir>/sim-state.json` atomically about once a
second and at every change of status. The stand-in reads it on every sample.
Format (version 1):

    {"simulated": true, "version": 1, "updated_at": <epoch s>,
     "pid": <server pid>, "port": 30000, "model": "GLM-5-NVFP4",
     "status": "starting" | "loading" | "ready" | "hung" | "crashed" | "stopped",
     "crash_kind": null | "illegal-address" | "oom" | "nccl",
     "gpus": [{"index": 0, "name": "...", "uuid": "GPU-...", "bus_id": "00000000:18:00.0",
               "memory_total_mib": 97887, "memory_used_mib": 84217,
               "utilization_gpu": 97, "utilization_memory": 41,
               "power_limit_w": 600, "idle_power_w": 34,
               "max_sm_mhz": 2430, "idle_sm_mhz": 180}, ...],
     "processes": [{"pid": 1234, "gpu_index": 0, "gpu_uuid": "GPU-...",
                    "used_memory_mib": 84200, "process_name": "sglang::scheduler_TP0"}, ...]}

A server that is gone without saying so (killed with SIGKILL) left a status
of starting/loading/ready/hung and a pid that no longer exists: readers then
treat its GPUs as idle. A crash, by contrast, is written before the process
exits, and its picture (0 MiB, utilisation stuck at 100%) stays until the
next server starts.
"""
from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

from profiles.atomic import write_atomic

from ..pids import pid_alive
from .hardware import GPUModel, bus_id, find_gpu, gpu_uuid

STATE_FILE = "sim-state.json"
HOST_FILE = "sim-host.json"
IDLE_MIB = 3
LIVE = ("starting", "loading", "ready", "hung")


def state_path(state_dir: Path) -> Path:
    return Path(state_dir) / STATE_FILE


def gpu_rows(model: GPUModel, count: int) -> list[dict[str, Any]]:
    """Idle rows for `count` GPUs of one model."""
    return [{"index": i, "name": model.name, "uuid": gpu_uuid(i), "bus_id": bus_id(i),
             "memory_total_mib": model.memory_mib, "memory_used_mib": IDLE_MIB,
             "utilization_gpu": 0, "utilization_memory": 0,
             "power_limit_w": model.power_limit_w, "idle_power_w": model.idle_power_w,
             "max_sm_mhz": model.max_sm_mhz, "idle_sm_mhz": model.idle_sm_mhz} for i in range(count)]


def write_state(state_dir: Path, doc: dict[str, Any]) -> None:
    doc = dict(doc, simulated=True, version=1, updated_at=round(time.time(), 3))
    write_atomic(state_path(state_dir), json.dumps(doc, indent=1), mode=0o644)


def write_host(state_dir: Path, gpu: str, count: int) -> None:
    """The simulated hardware, for the stand-in to show before any server has started."""
    model = find_gpu(gpu)
    write_atomic(Path(state_dir) / HOST_FILE, json.dumps({"gpu": model.name, "count": count}), mode=0o644)


def read_state(state_dir: Path | None, gpu: str | None = None, count: int | None = None) -> dict[str, Any]:
    """What the GPUs look like now: the server's state, or idle GPUs when there is none or it is gone."""
    host: dict[str, Any] = {}
    if state_dir is not None:
        try:
            host = json.loads((Path(state_dir) / HOST_FILE).read_text())
        except (OSError, ValueError):
            host = {}
        try:
            doc = json.loads(state_path(state_dir).read_text())
        except (OSError, ValueError):
            doc = None
        if isinstance(doc, dict) and isinstance(doc.get("gpus"), list):
            if doc.get("status") in LIVE and not pid_alive(doc.get("pid")):
                return _idle_like(doc, "gone")
            return doc
    model = find_gpu(gpu or host.get("gpu") or "RTX PRO 6000 Blackwell")
    rows = gpu_rows(model, int(count or host.get("count") or 8))
    return {"simulated": True, "version": 1, "status": "none", "pid": None, "gpus": rows, "processes": []}


def _idle_like(doc: dict[str, Any], status: str) -> dict[str, Any]:
    gpus = [dict(g, memory_used_mib=IDLE_MIB, utilization_gpu=0, utilization_memory=0) for g in doc["gpus"]]
    return dict(doc, status=status, gpus=gpus, processes=[])
