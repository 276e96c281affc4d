"""GPUs from NVIDIA's DCGM exporter series, however they arrive.

The exporter publishes one series per (field, GPU) with the labels `gpu`,
`UUID`, `pci_bus_id`, `device`, `modelName`, `Hostname` and, under
Kubernetes, `pod`/`namespace`/`container`; MIG instances add `GPU_I_ID` and
`GPU_I_PROFILE`. Whether the series come from an exporter's text page or from
Prometheus's HTTP API, they reduce to `Series(name, labels, value)` and are
folded here into one `Snapshot` per host.

What DCGM cannot show is said, not invented: it has no process list, so
per-process memory stays unknown and `processes_known` is False.

A fleet of thousands of GPUs is folded every second, so the work per series
is a few dictionary lookups: each host name is cleaned once per fold, and
what a GPU's labels say (index, UUID, model, bus, workloads) is worked out
once per distinct label set and remembered (`_identity`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Iterable, NamedTuple

from .model import GPU, NA, OK, MIGDevice, Snapshot, known
from .ranges import RANGES, physical

# DCGM field -> GPU attribute. Fields missing from an exporter stay NA.
GPU_FIELDS = {
    "DCGM_FI_DEV_GPU_UTIL": "util_gpu_pct",
    "DCGM_FI_DEV_MEM_COPY_UTIL": "util_mem_pct",
    "DCGM_FI_DEV_FB_USED": "memory_used_mib",
    "DCGM_FI_DEV_GPU_TEMP": "temperature_c",
    "DCGM_FI_DEV_POWER_USAGE": "power_draw_w",
    "DCGM_FI_DEV_POWER_MGMT_LIMIT": "power_limit_w",
    "DCGM_FI_DEV_SM_CLOCK": "sm_clock_mhz",
    "DCGM_FI_DEV_XID_ERRORS": "xid",
}
FB_FREE = "DCGM_FI_DEV_FB_FREE"
FB_RESERVED = "DCGM_FI_DEV_FB_RESERVED"
FB_TOTAL = "DCGM_FI_DEV_FB_TOTAL"
SERIES_NAMES = (*GPU_FIELDS, FB_FREE, FB_RESERVED, FB_TOTAL)
# Every label `fold` reads: a series' other labels (job, driver version, container...) change nothing.
ID_LABELS = ("instance", "Hostname", "gpu", "device", "UUID", "GPU_I_ID", "GPU_I_PROFILE", "modelName",
             "pci_bus_id", "pod", "namespace")

# Values the whole device shares, repeated by the exporter on every MIG row.
DEVICE_WIDE = {"temperature_c", "power_draw_w", "power_limit_w", "sm_clock_mhz", "xid"}
INTEGER = {"util_gpu_pct", "util_mem_pct", "memory_used_mib", "temperature_c", "sm_clock_mhz", "xid"}

CANNOT_SHOW = ("per-process GPU memory and process names (DCGM has no process list)",
               "P-state and throttle reasons (not in the exporter's default counters)")

# What an XID usually means (NVIDIA's XID catalogue); the flag carries the code.
XID_MEANINGS = {
    13: "graphics engine exception (often an application fault)",
    31: "GPU memory page fault (often an application fault)",
    32: "invalid or corrupted push buffer stream",
    43: "GPU stopped processing (a user application fault)",
    45: "preemptive cleanup after an earlier error",
    48: "double-bit ECC error: drain and reset the GPU",
    61: "internal micro-controller breakpoint/warning",
    62: "internal micro-controller halt",
    63: "ECC page retirement or row remap recorded",
    64: "ECC page retirement or row remap failed",
    68: "video processor exception",
    69: "graphics engine class error",
    74: "NVLink error",
    79: "GPU has fallen off the bus: reset or reboot the node",
    92: "high single-bit ECC error rate",
    94: "contained ECC error: restart the affected application",
    95: "uncontained ECC error: reset the GPU",
    109: "context switch timeout",
    119: "GSP RPC timeout",
    120: "GSP error",
    140: "unrecovered ECC error",
}


def xid_meaning(code: int) -> str:
    return XID_MEANINGS.get(code, "see NVIDIA's XID catalogue")


class Series(NamedTuple):
    """One sample of one series: metric name, its labels, its value."""

    name: str
    labels: dict
    value: float


@dataclass
class _Device:
    labels: dict
    whole: bool = False                             # labels come from a whole-GPU row
    values: dict = field(default_factory=dict)
    mig: dict = field(default_factory=dict)        # GPU_I_ID -> {"profile", "used", "free"}


_CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")


@lru_cache(maxsize=1 << 15)
def _clean(value: str) -> str:
    return _CONTROL.sub("?", value)[:200]


def clean(value) -> str:
    """A label value as it may reach a terminal: control characters made visible as '?'."""
    return _clean(str(value))


def host_of(labels: dict) -> str:
    """The host a series belongs to: the exporter's `Hostname`, else the scrape target."""
    return clean(labels.get("Hostname") or labels.get("instance") or "?")


def _number(value: float, attr: str):
    """A series value as the GPU attribute reads it; outside the attribute's physical range it is NA."""
    if type(value) is float:       # the common case, once per series of the fleet: a finite range check
        low, high = RANGES[attr]
        if not low <= value <= high:   # NaN and the infinities fail it too
            return NA
        return round(value) if attr in INTEGER else round(value, 2)
    value = physical(attr, value)
    if value is None:
        return NA
    return int(round(value)) if attr in INTEGER else round(float(value), 2)


_WANTED = frozenset(SERIES_NAMES)
# series name -> (GPU attribute, lowest, highest, read as a whole number)
_PLAN = {name: (attr, *RANGES[attr], attr in INTEGER) for name, attr in GPU_FIELDS.items()}
_DEVICE_WIDE_NAMES = frozenset(name for name, attr in GPU_FIELDS.items() if attr in DEVICE_WIDE)


def fold(series: Iterable[tuple[str, dict, float]] = (), *, gpus: Iterable[tuple[dict, dict]] = (),
         taken_at: float | None = None, simulated: bool = False) -> dict[str, Snapshot]:
    """Series (`Series` or plain `(name, labels, value)` tuples) of any number of hosts -> one
    Snapshot per host (ordered by host name).

    `gpus` is the same kind of input already grouped: (labels, {series name: value}) for each label
    set, every name one fold reads (`SERIES_NAMES`); each dict is fold's to keep. It is what the
    fleet's compact answer reads to (fleet_query.py), placed once per GPU rather than once per value."""
    hosts: dict[str, str] = {}                       # raw Hostname/instance -> its cleaned name
    devices: dict[str, dict[tuple, _Device]] = {}

    def place(labels: dict) -> _Device:
        raw = labels.get("Hostname") or labels.get("instance") or "?"
        host = hosts.get(raw)
        if host is None:
            host = hosts[raw] = clean(raw)
            devices.setdefault(host, {})
        # the index is unique on a host; UUIDs may be masked ("GPU-********") in pasted output
        gpu_key = (labels.get("gpu") or labels.get("device") or "?", labels.get("UUID") or "")
        on_host = devices[host]
        dev = on_host.get(gpu_key)
        if dev is None:
            dev = on_host[gpu_key] = _Device(labels=labels)
        return dev

    last = dev = instance = None      # the previous series' labels object, its device and MIG instance
    for name, labels, value in series:
        if name not in _WANTED and not name.startswith("DCGM_FI_"):
            continue
        if labels is not last:        # a GPU's series that share one labels object are placed once
            last = labels
            dev = place(labels)
            instance = labels.get("GPU_I_ID")
        if name not in _WANTED:
            continue    # another DCGM field: it proves the GPU exists, nothing more
        if instance:
            _put_mig(dev, instance, labels, name, value)
        else:
            dev.values[name] = value
            if not dev.whole:       # the whole-GPU row's labels describe the GPU (no instance labels)
                dev.labels, dev.whole = labels, True
    for labels, values in gpus:
        dev = place(labels)
        instance = labels.get("GPU_I_ID")
        if instance:
            for name, value in values.items():
                _put_mig(dev, instance, labels, name, value)
        elif values:
            if dev.values:
                dev.values.update(values)
            else:
                dev.values = values
            if not dev.whole:
                dev.labels, dev.whole = labels, True
    out: dict[str, Snapshot] = {}
    for host in sorted(devices):
        gpus_on = [_gpu(dev) for dev in devices[host].values()]
        gpus_on.sort(key=_gpu_order)
        out[host] = Snapshot(state=OK, gpus=gpus_on, processes=[], processes_known=False, taken_at=taken_at,
                             host=host, source="dcgm", simulated=simulated)
    return out


def _put_mig(dev: _Device, instance: str, labels: dict, name: str, value: float) -> None:
    """One value of a MIG instance; the values the whole device shares are the device's too."""
    profile = labels.get("GPU_I_PROFILE")
    mig = dev.mig.setdefault(clean(instance), {"profile": clean(profile) if profile else NA})
    mig[name] = value
    if name in _DEVICE_WIDE_NAMES:
        dev.values.setdefault(name, value)


def _gpu_order(g: GPU) -> tuple:
    return (g.index if known(g.index) else 1 << 30, str(g.uuid))


@lru_cache(maxsize=1 << 16)
def _identity(index, uuid, model, bus, pod, namespace) -> tuple:
    """What a GPU's labels say about it, worked out once per distinct label set."""
    return (int(index) if str(index).isdigit() else NA,
            clean(uuid) if uuid else NA,
            clean(model) if model else NA,
            clean(bus) if bus else NA,
            (clean(f"{namespace}/{pod}" if namespace else pod),) if pod else ())


def _gpu(dev: _Device) -> GPU:
    labels = dev.labels
    values = dev.values if not dev.mig else dict(dev.values)
    if dev.mig and "DCGM_FI_DEV_FB_USED" not in values:
        # MIG mode with no whole-GPU row: memory is the sum over instances when each reports it.
        used = [m.get("DCGM_FI_DEV_FB_USED") for m in dev.mig.values()]
        free = [m.get(FB_FREE) for m in dev.mig.values()]
        if used and all(v is not None for v in used):
            values["DCGM_FI_DEV_FB_USED"] = sum(used)
            if all(v is not None for v in free):
                values.setdefault(FB_FREE, sum(free))
    index, uuid, model, bus, workloads = _identity(
        labels.get("gpu"), labels.get("UUID"), labels.get("modelName"), labels.get("pci_bus_id"),
        labels.get("pod"), labels.get("namespace"))
    read = {}
    for name, value in values.items():
        plan = _PLAN.get(name)
        if plan is None:
            continue
        attr, low, high, whole = plan
        if type(value) is float:     # `_number` inlined: this runs for every series of the fleet
            read[attr] = (round(value) if whole else round(value, 2)) if low <= value <= high else NA
        else:
            read[attr] = _number(value, attr)
    gpu = GPU(index=index, uuid=uuid, name=model, bus_id=bus, workloads=list(workloads),
              memory_total_mib=_total(values), **read)
    if dev.mig:
        gpu.mig_devices = [MIGDevice(gpu_index=gpu.index, gi=int(k) if k.isdigit() else k, ci=NA, dev=NA,
                                     memory_used_mib=_number(m.get("DCGM_FI_DEV_FB_USED"), "memory_used_mib"),
                                     profile=m.get("profile") or NA)
                           for k, m in sorted(dev.mig.items())]
    return gpu


def _total(values: dict):
    """FB_TOTAL when exported, else used + free (+ reserved when exported)."""
    if FB_TOTAL in values:
        return _number(values[FB_TOTAL], "memory_used_mib")
    used, free = values.get("DCGM_FI_DEV_FB_USED"), values.get(FB_FREE)
    if used is None or free is None:
        return NA
    return _number(used + free + values.get(FB_RESERVED, 0.0), "memory_used_mib")


def parse_exposition(text: str) -> list[Series]:
    """An exporter's `/metrics` page -> series (ValueError with the reason on a malformed page)."""
    from prometheus_client.parser import text_string_to_metric_families

    out: list[Series] = []
    try:
        for family in text_string_to_metric_families(text):
            for sample in family.samples:
                out.append(Series(sample.name, dict(sample.labels), float(sample.value)))
    except (ValueError, TypeError, IndexError) as exc:
        raise ValueError(f"not Prometheus text format: {exc}") from None
    return out
