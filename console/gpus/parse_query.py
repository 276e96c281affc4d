"""`nvidia-smi -q`: the full query, one indented block per GPU.

The text is a tree written with indentation ("    FB Memory Usage" then
"        Used : 0 MiB"); each value is read by its path in that tree, so a
field that moved between driver versions ("Power Readings" became "GPU
Power Readings", "Power Limit" became "Current Power Limit") is looked
for under each of its names. The GPU index is not printed: it is the order
of the blocks only when every attached GPU is listed (not with `-i`).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from . import values
from .model import GPU, NA, GPUProcess

_BANNER = re.compile(r"^=+\s*NVSMI LOG\s*=+$")
_GPU_HEADER = re.compile(r"^GPU ([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\s*$")
_KEY_VALUE = re.compile(r"^(?P<key>[^:]+?)\s*:\s?(?P<value>.*)$")

# GPU attribute -> (converter, paths under the GPU block, first found wins)
_FIELDS = {
    "name": (values.word, ["Product Name"]),
    "uuid": (values.word, ["GPU UUID"]),
    "util_gpu_pct": (values.number, ["Utilization/Gpu", "Utilization/GPU"]),
    "util_mem_pct": (values.number, ["Utilization/Memory"]),
    "memory_used_mib": (values.number, ["FB Memory Usage/Used"]),
    "memory_total_mib": (values.number, ["FB Memory Usage/Total"]),
    "memory_reserved_mib": (values.number, ["FB Memory Usage/Reserved"]),
    "temperature_c": (values.number, ["Temperature/GPU Current Temp"]),
    "power_draw_w": (values.number, ["GPU Power Readings/Power Draw", "GPU Power Readings/Average Power Draw",
                                     "GPU Power Readings/Instantaneous Power Draw", "Power Readings/Power Draw"]),
    "power_limit_w": (values.number, ["GPU Power Readings/Current Power Limit", "Power Readings/Power Limit",
                                      "GPU Power Readings/Power Limit", "Power Readings/Enforced Power Limit",
                                      "GPU Power Readings/Enforced Power Limit"]),
    "sm_clock_mhz": (values.number, ["Clocks/SM"]),
    "sm_clock_max_mhz": (values.number, ["Max Clocks/SM"]),
    "pstate": (values.word, ["Performance State"]),
}


@dataclass
class QueryParse:
    gpus: list[GPU] = field(default_factory=list)
    processes: list[GPUProcess] = field(default_factory=list)
    processes_known: bool = False
    driver: str | None = None
    attached: int | None = None

    @property
    def found(self) -> bool:
        return bool(self.gpus)


def looks_like_query(lines: Sequence[str]) -> bool:
    return any(_BANNER.match(line.strip()) for line in lines[:200]) or \
        any(_GPU_HEADER.match(line.strip()) for line in lines[:400]) and \
        any(line.strip().startswith("Product Name") for line in lines)


def parse_query_lines(lines: Sequence[str]) -> QueryParse:
    out = QueryParse()
    blocks: list[tuple[str, dict[str, str], list[dict[str, str]], bool]] = []
    current: dict[str, str] | None = None
    processes: list[dict[str, str]] = []
    saw_processes = False
    stack: list[tuple[int, str]] = []  # (indent, section name) above the current line
    base_indent = 0
    bus_id = ""  # set with `current` by each GPU's header
    for raw in lines:
        if not raw.strip():
            continue
        text = raw.rstrip()
        indent = len(text) - len(text.lstrip(" "))
        line = text.strip()
        header = _GPU_HEADER.match(line)
        if header:
            if current is not None:
                blocks.append((bus_id, current, processes, saw_processes))
            bus_id, current, processes, saw_processes = header.group(1), {}, [], False
            stack, base_indent = [], indent
            continue
        pair = _KEY_VALUE.match(line)
        if current is None:
            if pair and pair.group("key") == "Driver Version":
                out.driver = pair.group("value").strip() or None
            elif pair and pair.group("key") == "Attached GPUs":
                attached = values.integer(pair.group("value"))
                out.attached = attached if attached is not NA else None
            continue
        if indent <= base_indent:  # the GPU block ended
            blocks.append((bus_id, current, processes, saw_processes))
            current = None
            continue
        while stack and stack[-1][0] >= indent:
            stack.pop()
        path = [name for _, name in stack]
        if pair is None:
            stack.append((indent, line))
            continue
        key, value = pair.group("key").strip(), pair.group("value").strip()
        if not path and key == "Processes":
            saw_processes = True  # "Processes : None"
            continue
        if path[:1] == ["Processes"]:
            saw_processes = True
            if key == "Process ID":
                processes.append({"Process ID": value})
                stack.append((indent, "Process"))
            elif processes and path[-1:] == ["Process"]:
                processes[-1][key] = value
            continue
        if value == "" and not path:
            stack.append((indent, key))
            continue
        current["/".join(path + [key])] = value
    if current is not None:
        blocks.append((bus_id, current, processes, saw_processes))

    every_gpu_listed = out.attached is not None and out.attached == len(blocks)
    out.processes_known = bool(blocks) and all(block[3] for block in blocks)
    for position, (bus_id, fields, procs, _) in enumerate(blocks):
        gpu = GPU(bus_id=bus_id, index=position if every_gpu_listed else NA)
        for attr, (convert, paths) in _FIELDS.items():
            for path in paths:
                if path in fields:
                    setattr(gpu, attr, convert(fields[path]))
                    break
        out.gpus.append(gpu)
        for proc in procs:
            out.processes.append(GPUProcess(
                gpu_index=gpu.index, pid=values.integer(proc.get("Process ID", "")),
                type=values.word(proc.get("Type", "")), name=values.word(proc.get("Name", "")),
                used_memory_mib=values.number(proc.get("Used GPU Memory", "")), gpu_uuid=gpu.uuid))
    return out
