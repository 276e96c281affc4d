"""The nvidia-smi query fields gpudeck asks for, and how each maps to the model.

The sampler asks for one fixed list so that every line has a known, exact
column count. Drivers before 535 call the throttle bitmask
`clocks_throttle_reasons.active`; drivers without either get the list
without it.
"""
from __future__ import annotations

from typing import Any, Callable

from . import values

THROTTLE_NEW = "clocks_event_reasons.active"
THROTTLE_OLD = "clocks_throttle_reasons.active"

BASE_FIELDS = [
    "count", "index", "uuid", "name", "pci.bus_id",
    "utilization.gpu", "utilization.memory", "memory.used", "memory.total",
    "temperature.gpu", "power.draw", "power.limit", "clocks.sm", "clocks.max.sm", "pstate",
]
# Tried in this order: the first the driver accepts is kept.
GPU_FIELD_LISTS = [BASE_FIELDS + [THROTTLE_NEW], BASE_FIELDS + [THROTTLE_OLD], BASE_FIELDS]
GPU_FIELDS = GPU_FIELD_LISTS[0]

# The process name goes last: it is the only value that may contain ", ".
APPS_FIELDS = ["pid", "gpu_uuid", "used_memory", "process_name"]

# field -> (GPU attribute, converter)
GPU_COLUMNS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "index": ("index", values.integer),
    "uuid": ("uuid", values.word),
    "name": ("name", values.word),
    "pci.bus_id": ("bus_id", values.word),
    "utilization.gpu": ("util_gpu_pct", values.number),
    "utilization.memory": ("util_mem_pct", values.number),
    "memory.used": ("memory_used_mib", values.number),
    "memory.total": ("memory_total_mib", values.number),
    "temperature.gpu": ("temperature_c", values.number),
    "power.draw": ("power_draw_w", values.number),
    "power.limit": ("power_limit_w", values.number),
    "clocks.sm": ("sm_clock_mhz", values.number),
    "clocks.max.sm": ("sm_clock_max_mhz", values.number),
    "pstate": ("pstate", values.word),
    THROTTLE_NEW: ("throttle_mask", values.hexmask),
    THROTTLE_OLD: ("throttle_mask", values.hexmask),
}

# field -> (GPUProcess attribute, converter)
APP_COLUMNS: dict[str, tuple[str, Callable[[str], Any]]] = {
    "pid": ("pid", values.integer),
    "gpu_uuid": ("gpu_uuid", values.word),
    "used_memory": ("used_memory_mib", values.number),
    "process_name": ("name", values.word),
}

# Other spellings nvidia-smi accepts or prints in headers -> canonical name.
ALIASES = {
    "gpu_name": "name", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id", "pci.bus_id": "pci.bus_id",
    "utilization.gpu": "utilization.gpu", "utilization.memory": "utilization.memory",
    "temperature.gpu": "temperature.gpu", "power.draw.instant": "power.draw",
    "power.draw.average": "power.draw", "enforced.power.limit": "power.limit",
    "power.limit": "power.limit", "clocks.current.sm": "clocks.sm", "clocks.max.sm": "clocks.max.sm",
    "clocks.max.sms": "clocks.max.sm", "clocks_event_reasons.active": THROTTLE_NEW,
    "clocks_throttle_reasons.active": THROTTLE_OLD,
}
APP_ALIASES = {"name": "process_name", "used_gpu_memory": "used_memory", "gpu_uuid": "gpu_uuid",
               "pid": "pid", "process_name": "process_name", "used_memory": "used_memory"}
APP_ONLY = {"pid", "process_name", "used_gpu_memory", "used_memory"}
APP_FIELD_NAMES = APP_ONLY | {"gpu_uuid", "gpu_bus_id", "gpu_name", "gpu_serial", "name"}


def canonical_gpu_field(name: str) -> str:
    return ALIASES.get(name, name)
