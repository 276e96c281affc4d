"""The default `nvidia-smi` table: GPU blocks, MIG devices, processes.

Works cell by cell (split on "|") rather than by column positions, because
the column widths changed between drivers (the 535 layout is 87 columns, 550+
is 89, Windows adds a Driver-Model column). Text before the first "|" on a
line (a quote marker, a log prefix) is ignored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from . import values
from .model import GPU, GPUProcess, MIGDevice, NA

_BUS = re.compile(r"\b([0-9A-Fa-f]{4,8}:[0-9A-Fa-f]{2}:[0-9A-Fa-f]{2}\.[0-9A-Fa-f])\b")
_FIRST = re.compile(r"^\s*(\d+)\s+(.+?)\s+(On|Off|WDDM|TCC|MCDM|N/A)\s*$")
_FIRST_LOOSE = re.compile(r"^\s*(\d+)\s+(\S.*?)\s*$")
_SECOND = re.compile(
    r"^\s*(?P<fan>\d+%|N/A|ERR!)\s+(?P<temp>\d+C|N/A|ERR!)\s+(?P<perf>P\d+|N/A|ERR!)"
    r"\s+(?P<draw>[\d.]+W|N/A|ERR!)\s*/\s*(?P<cap>[\d.]+W|N/A|ERR!)\s*$")
_MEMORY = re.compile(r"(\d+|N/A)\s*MiB\s*/\s*(\d+|N/A)\s*MiB|^\s*N/A\s*/\s*N/A\s*$")
_UTIL = re.compile(r"^\s*(\d+%|N/A|ERR!)\s+(\S.*?)\s*$")
_PROCESS = re.compile(
    r"^\s*(?P<gpu>\d+|N/A)\s+(?:(?P<gi>\d+|N/A)\s+(?P<ci>\d+|N/A)\s+)?(?P<pid>\d+)\s+"
    r"(?P<type>C\+G|M\+C|C|G|M)\s+(?P<name>.+?)\s+(?P<mem>\d+\s*MiB|N/A)\s*$")
_MIG_IDS = re.compile(r"^\s*(\d+)\s+(\d+)\s+(\d+)\s+(\d+)\s*$")


def _cells(line: str) -> list[str] | None:
    start = line.find("|")
    if start < 0:
        return None
    body = line[start:].rstrip()
    if not body.endswith("|") or len(body) < 3:
        return None
    return body[1:-1].split("|")


@dataclass
class TableParse:
    gpus: list[GPU] = field(default_factory=list)
    processes: list[GPUProcess] = field(default_factory=list)
    processes_known: bool = False
    mig: list[MIGDevice] = field(default_factory=list)
    driver: str | None = None

    @property
    def found(self) -> bool:
        return bool(self.gpus or self.mig or self.processes_known)


def parse_table_lines(lines: Sequence[str]) -> TableParse:
    out = TableParse()
    section = "gpus"
    current: GPU | None = None
    row_in_block = 0
    mig_current: MIGDevice | None = None
    for line in lines:
        if "Driver Version:" in line and out.driver is None:
            m = re.search(r"Driver Version:\s*(\S+)", line)
            out.driver = m.group(1) if m else None
        if "Processes:" in line:
            section = "processes"
            out.processes_known = True
            continue
        if "MIG devices:" in line:
            section = "mig"
            continue
        cells = _cells(line)
        if cells is None:
            continue
        if section == "gpus":
            if len(cells) < 3:
                continue
            first = _FIRST.match(cells[0]) or (_BUS.search(cells[1]) and _FIRST_LOOSE.match(cells[0]))
            if first and _BUS.search(cells[1]):
                current = GPU(index=int(first.group(1)), name=first.group(2).strip(),
                              bus_id=_BUS.search(cells[1]).group(1))
                out.gpus.append(current)
                row_in_block = 1
                continue
            if current is not None and row_in_block == 1:
                _read_second_row(current, cells)
                row_in_block = 2
        elif section == "mig":
            if len(cells) < 2:
                continue
            ids = _MIG_IDS.match(cells[0])
            mem = _MEMORY.search(cells[1])
            if ids:
                mig_current = MIGDevice(*(int(x) for x in ids.groups()))
                if mem and mem.group(1):
                    mig_current.memory_used_mib = values.number(mem.group(1))
                    mig_current.memory_total_mib = values.number(mem.group(2))
                if len(cells) > 2:
                    sm = cells[2].split()
                    mig_current.sm_count = values.integer(sm[0]) if sm else NA
                out.mig.append(mig_current)
        elif section == "processes":
            m = _PROCESS.match(cells[0]) if len(cells) == 1 else None
            if m:
                out.processes.append(GPUProcess(
                    gpu_index=values.integer(m.group("gpu")), pid=int(m.group("pid")),
                    type=m.group("type"), name=m.group("name").strip(),
                    used_memory_mib=values.number(m.group("mem").replace(" ", "")),
                    gi=values.integer(m.group("gi") or "N/A"), ci=values.integer(m.group("ci") or "N/A")))
    _attach_mig(out)
    return out


def _read_second_row(gpu: GPU, cells: list[str]) -> None:
    m = _SECOND.match(cells[0])
    if m:
        gpu.temperature_c = values.number(m.group("temp").rstrip("C"))
        gpu.pstate = values.word(m.group("perf"))
        gpu.power_draw_w = values.number(m.group("draw"))
        gpu.power_limit_w = values.number(m.group("cap"))
    mem = _MEMORY.search(cells[1])
    if mem and mem.group(1):
        gpu.memory_used_mib = values.number(mem.group(1))
        gpu.memory_total_mib = values.number(mem.group(2))
    util = _UTIL.match(cells[2])
    if util:
        gpu.util_gpu_pct = values.number(util.group(1))


def _attach_mig(out: TableParse) -> None:
    """MIG rows go under their GPU; a GPU known only from MIG rows gets a row of its own."""
    by_index = {g.index: g for g in out.gpus}
    for mig in out.mig:
        gpu = by_index.get(mig.gpu_index)
        if gpu is None:
            gpu = GPU(index=mig.gpu_index)
            by_index[mig.gpu_index] = gpu
            out.gpus.append(gpu)
        gpu.mig_devices.append(mig)
    out.gpus.sort(key=lambda g: g.index if isinstance(g.index, int) else 1 << 30)
