"""What one sample of a host's GPUs holds.

Unknown values are the single `NA` object: it prints as "N/A", is falsy, and
serialises to null, so nothing downstream can mistake "not reported" for 0.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

# Host-level states: `ok`, or why there are no GPU rows.
OK = "ok"
NO_DRIVER = "no-driver"
NO_DEVICES = "no-devices"
GPU_LOST = "gpu-lost"
GPU_ERROR = "gpu-error"
UNPARSED = "unparsed"
UNREACHABLE = "unreachable"   # the host itself could not be reached (sampler only)
WAITING = "waiting"           # no sample has arrived yet (sampler only)
STATES = (OK, NO_DRIVER, NO_DEVICES, GPU_LOST, GPU_ERROR, UNPARSED)


class _NotAvailable:
    """The one value for "[N/A]", "[Not Supported]" and friends."""

    _instance: "_NotAvailable | None" = None

    def __new__(cls) -> "_NotAvailable":
        if cls._instance is None:
            cls._instance = super().__new__(cls)
        return cls._instance

    def __repr__(self) -> str:
        return "NA"

    def __str__(self) -> str:
        return "N/A"

    def __format__(self, spec: str) -> str:
        return format("N/A", spec.rstrip("dfegn%") if spec and spec[-1] in "dfegn%" else spec)

    def __bool__(self) -> bool:
        return False

    def __reduce__(self):
        return (_NotAvailable, ())

    def to_json(self) -> None:
        return None


NA = _NotAvailable()


def known(value: Any) -> bool:
    return value is not NA and value is not None


def json_value(value: Any) -> Any:
    """NA (and None) become null; everything else stays."""
    return None if value is NA or value is None else value


@dataclass
class MIGDevice:
    """One MIG instance as the table's "MIG devices" section lists it."""

    gpu_index: Any
    gi: Any
    ci: Any
    dev: Any
    memory_used_mib: Any = NA
    memory_total_mib: Any = NA
    sm_count: Any = NA
    uuid: Any = NA
    profile: Any = NA   # e.g. "1g.10gb" from `nvidia-smi -L`

    def to_json(self) -> dict:
        return {"gpu_index": json_value(self.gpu_index), "gi": json_value(self.gi),
                "ci": json_value(self.ci), "dev": json_value(self.dev),
                "memory_used_mib": json_value(self.memory_used_mib),
                "memory_total_mib": json_value(self.memory_total_mib),
                "sm_count": json_value(self.sm_count), "uuid": json_value(self.uuid),
                "profile": json_value(self.profile)}


@dataclass
class GPU:
    """One physical GPU in one sample."""

    index: Any = NA
    uuid: Any = NA
    name: Any = NA
    bus_id: Any = NA
    util_gpu_pct: Any = NA
    util_mem_pct: Any = NA
    memory_used_mib: Any = NA        # as nvidia-smi counts it: the driver's reservation left out
    memory_total_mib: Any = NA
    memory_reserved_mib: Any = NA    # what the driver keeps for itself (NVML v2, `nvidia-smi -q`), when read
    temperature_c: Any = NA
    power_draw_w: Any = NA
    power_limit_w: Any = NA
    sm_clock_mhz: Any = NA
    sm_clock_max_mhz: Any = NA
    pstate: Any = NA
    throttle_mask: Any = NA          # clocks_event_reasons.active as an int
    xid: Any = NA                    # last XID error code (DCGM; 0 = none since the exporter started)
    workloads: list[str] = field(default_factory=list)   # "namespace/pod" where Kubernetes labels say
    mig_devices: list[MIGDevice] = field(default_factory=list)
    flags: list[str] = field(default_factory=list)
    throttle_reasons: list[str] = field(default_factory=list)

    @property
    def key(self) -> Any:
        """What identifies this GPU across samples."""
        for value in (self.uuid, self.bus_id, self.index):
            if known(value):
                return value
        return id(self)

    @property
    def memory_fraction(self) -> Any:
        if known(self.memory_used_mib) and known(self.memory_total_mib) and self.memory_total_mib > 0:
            return self.memory_used_mib / self.memory_total_mib
        return NA

    def to_json(self) -> dict:
        doc = {
            "index": json_value(self.index),
            "name": json_value(self.name),
            "bus_id": json_value(self.bus_id),
            "utilization_gpu_pct": json_value(self.util_gpu_pct),
            "memory_used_mib": json_value(self.memory_used_mib),
            "memory_total_mib": json_value(self.memory_total_mib),
            "temperature_c": json_value(self.temperature_c),
            "power_draw_w": json_value(self.power_draw_w),
            "power_limit_w": json_value(self.power_limit_w),
            "pstate": json_value(self.pstate),
            "flags": list(self.flags),
            # additions beyond the fixed keys
            "uuid": json_value(self.uuid),
            "utilization_memory_pct": json_value(self.util_mem_pct),
            "sm_clock_mhz": json_value(self.sm_clock_mhz),
            "sm_clock_max_mhz": json_value(self.sm_clock_max_mhz),
            "throttle_reasons": list(self.throttle_reasons),
        }
        if known(self.memory_reserved_mib):
            doc["memory_reserved_mib"] = self.memory_reserved_mib
        if known(self.xid):
            doc["xid"] = self.xid
        if self.workloads:
            doc["workloads"] = list(self.workloads)
        if self.mig_devices:
            doc["mig_devices"] = [m.to_json() for m in self.mig_devices]
        return doc


@dataclass
class GPUProcess:
    """One process holding a GPU context."""

    gpu_index: Any = NA
    pid: Any = NA
    type: Any = NA            # C, G, C+G, M ...
    name: Any = NA
    used_memory_mib: Any = NA
    gpu_uuid: Any = NA
    gi: Any = NA
    ci: Any = NA
    config: Any = NA          # the gpudeck launch config whose process group holds it, when known
    launch_id: Any = NA       # ... and that launch's record id
    cpu_percent: Any = NA     # its CPU load between the last two `ps` reads (console/gpus/proc_stats.py)
    rss_mib: Any = NA         # its resident host memory

    def to_json(self) -> dict:
        return {"gpu_index": json_value(self.gpu_index), "pid": json_value(self.pid),
                "type": json_value(self.type), "name": json_value(self.name),
                "used_memory_mib": json_value(self.used_memory_mib),
                "gpu_uuid": json_value(self.gpu_uuid),
                "config": json_value(self.config), "launch_id": json_value(self.launch_id),
                "cpu_percent": json_value(self.cpu_percent), "rss_mib": json_value(self.rss_mib)}


@dataclass
class Snapshot:
    """Everything known about one host's GPUs at one moment.

    `processes_known` is False when the input had no process list at all
    (a trimmed table, a query without compute-apps): then no flag that needs
    "no process" is raised. `sample_stale` is True while the stream is down
    and these numbers are the last ones that arrived, `taken_at` saying when.
    """

    state: str = OK
    message: str = ""
    gpus: list[GPU] = field(default_factory=list)
    processes: list[GPUProcess] = field(default_factory=list)
    processes_known: bool = False
    taken_at: float | None = None
    host: str | None = None
    source: str = "nvidia-smi"      # nvidia-smi | nvml | file | dcgm
    sample_stale: bool = False
    stale_reason: str = ""
    samples: int = 1                # how many samples went into the flags
    rejected_lines: int = 0
    simulated: bool = False

    def age(self, now: float) -> float | None:
        return None if self.taken_at is None else max(0.0, now - self.taken_at)

    def flag_count(self, flag: str) -> int:
        return sum(1 for g in self.gpus if flag in g.flags)

    def processes_on(self, gpu: GPU) -> list[GPUProcess]:
        out = []
        for p in self.processes:
            if known(p.gpu_uuid) and known(gpu.uuid):
                if p.gpu_uuid == gpu.uuid:
                    out.append(p)
            elif known(p.gpu_index) and known(gpu.index) and p.gpu_index == gpu.index:
                out.append(p)
        return out

    def summary(self) -> str:
        """The tab-title text: "8", "8 · 7 STALE", "no-driver"."""
        if self.state != OK:
            return self.state
        text = str(len(self.gpus))
        stale = self.flag_count("stale")
        if stale:
            text += f" · {stale} STALE"
        if self.sample_stale:
            text += " · no signal"
        return text

    def to_json(self, now: float | None = None) -> dict:
        doc = {"state": self.state, "message": self.message,
               "gpus": [g.to_json() for g in self.gpus],
               "processes": [p.to_json() for p in self.processes]}
        doc["processes_known"] = self.processes_known
        if self.host is not None:
            doc["host"] = self.host
        doc["source"] = self.source
        doc["taken_at"] = self.taken_at
        if now is not None:
            doc["sample_age_s"] = None if self.taken_at is None else round(self.age(now), 3)
        doc["sample_stale"] = self.sample_stale
        if self.simulated:
            doc["simulated"] = True
        return doc
