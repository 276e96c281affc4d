"""`nvidia-smi --query-gpu` / `--query-compute-apps` CSV, with or without header or units.

nvidia-smi separates values with ", ". Every data line must have exactly as
many values as there are fields; a line that does not is rejected whole and
counted, never half-read (a truncated line must not turn into zeros).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Sequence

from . import fields as F
from .model import GPU, GPUProcess, NA, known

SEP = ", "
_HEADER_CELL = re.compile(r"^([a-z][a-z0-9_.]*)(?:\s*\[[^\]]*\])?$")


class BadLine(ValueError):
    """A CSV line that does not fit the field list."""


def split_row(line: str, count: int, last_takes_rest: bool = False) -> list[str]:
    """The `count` values of a line, or BadLine."""
    line = line.rstrip("\r\n")
    cells = line.split(SEP, count - 1) if last_takes_rest else line.split(SEP)
    if len(cells) != count:
        raise BadLine(f"{len(cells)} values where {count} were expected")
    return cells


def gpu_from_cells(cells: Sequence[str], names: Sequence[str]) -> GPU:
    gpu = GPU()
    for name, cell in zip(names, cells):
        column = F.GPU_COLUMNS.get(F.canonical_gpu_field(name))
        if column:
            attr, convert = column
            setattr(gpu, attr, convert(cell))
    return gpu


def parse_gpu_line(line: str, names: Sequence[str] = F.GPU_FIELDS) -> GPU:
    """One `--format=csv,noheader,nounits` line of the given fields."""
    gpu = gpu_from_cells(split_row(line, len(names)), names)
    if "index" in names and not known(gpu.index):
        raise BadLine("no GPU index")
    return gpu


def process_from_cells(cells: Sequence[str], names: Sequence[str]) -> GPUProcess:
    proc = GPUProcess(type="C")
    for name, cell in zip(names, cells):
        column = F.APP_COLUMNS.get(F.APP_ALIASES.get(name, name))
        if column:
            attr, convert = column
            setattr(proc, attr, convert(cell))
    return proc


def parse_app_line(line: str, names: Sequence[str] = F.APPS_FIELDS) -> GPUProcess:
    last_is_name = F.APP_ALIASES.get(names[-1], names[-1]) == "process_name"
    return process_from_cells(split_row(line, len(names), last_takes_rest=last_is_name), names)


def header_fields(line: str) -> list[str] | None:
    """The field names of a header line ("utilization.gpu [%]" -> "utilization.gpu"), else None."""
    cells = [c.strip() for c in line.split(SEP)]
    names = []
    for cell in cells:
        m = _HEADER_CELL.match(cell)
        if not m:
            return None
        names.append(m.group(1))
    recognised = [n for n in names if F.canonical_gpu_field(n) in F.GPU_COLUMNS or n in F.APP_FIELD_NAMES
                  or n in ("timestamp", "driver_version", "count", "memory.free")]
    return names if recognised else None


_COMMAND = re.compile(r"--query-(gpu|compute-apps)(?:=|\s+)[\"']?([A-Za-z0-9_.,]+)")
_FORMAT = re.compile(r"--format(?:=|\s+)[\"']?([a-z,]+)")


def command_fields(line: str) -> tuple[list[str], bool] | None:
    """(field names, is compute-apps) from an nvidia-smi query command line, else None.

    Only a command that asks for CSV counts: that is what the lines below it are."""
    query = _COMMAND.search(line)
    form = _FORMAT.search(line)
    if not query or not form or "csv" not in form.group(1).split(","):
        return None
    names = [name for name in query.group(2).split(",") if name]
    return (names, query.group(1) == "compute-apps") if names else None


def is_apps_header(names: Sequence[str]) -> bool:
    return any(n in F.APP_ONLY for n in names) or all(n in F.APP_FIELD_NAMES for n in names)


@dataclass
class CSVParse:
    """What a CSV text held: GPU samples in order, processes if any, rejects."""

    samples: list[list[GPU]] = field(default_factory=list)
    processes: list[GPUProcess] = field(default_factory=list)
    saw_apps: bool = False
    rejected: list[str] = field(default_factory=list)
    data_lines: int = 0
    cut_off: bool = False

    @property
    def found(self) -> bool:
        return bool(self.samples) or self.saw_apps


class _Grouper:
    """Splits a stream of GPU rows into samples (one row per GPU per sample)."""

    def __init__(self, names: Sequence[str]):
        canon = [F.canonical_gpu_field(n) for n in names]
        self.identity = next((f for f in ("index", "uuid", "pci.bus_id") if f in canon), None)
        self.timestamp_at = names.index("timestamp") if "timestamp" in names else None
        self.samples: list[list[GPU]] = []
        self.current: list[GPU] = []
        self.current_stamp: str | None = None
        self.seen: set = set()

    def add(self, gpu: GPU, cells: Sequence[str]) -> None:
        if self.identity:
            key = gpu.key
            if key in self.seen:
                self.flush()
            self.seen.add(key)
        elif self.timestamp_at is not None:
            stamp = cells[self.timestamp_at]
            if self.current and stamp != self.current_stamp:
                self.flush()
            self.current_stamp = stamp
        self.current.append(gpu)

    def flush(self) -> None:
        if self.current:
            self.samples.append(self.current)
        self.current = []
        self.seen = set()


def parse_csv_lines(lines: Sequence[str]) -> CSVParse:
    """Every CSV form nvidia-smi writes, found among other (ignored) lines.

    Without a header, only lines with the exact column count of gpudeck's own
    field lists, or of the field list on a pasted `nvidia-smi --query-…`
    command line, are understood; anything else cannot be told apart.
    """
    out = CSVParse()
    names: list[str] | None = None
    apps = False
    grouper: _Grouper | None = None

    def finish_group() -> None:
        if grouper is not None:
            grouper.flush()
            out.samples.extend(grouper.samples)

    for raw in lines:
        line = raw.strip()
        if not line:
            continue
        command = command_fields(line)
        if command is not None:
            # `nvidia-smi --query-gpu=a,b --format=csv,noheader` pasted above its output:
            # the command line names the columns that follow.
            finish_group()
            names, apps = command
            grouper = None if apps else _Grouper(names)
            out.saw_apps = out.saw_apps or apps
            continue
        header = header_fields(line)
        if header is not None and (SEP in line or len(header) == 1 and names is None):
            finish_group()
            names, apps = header, is_apps_header(header)
            grouper = None if apps else _Grouper(header)
            out.saw_apps = out.saw_apps or apps
            continue
        if names is None:
            _headerless(line, out)
            continue
        try:
            if apps:
                out.processes.append(parse_app_line(line, names))
            else:
                cells = split_row(line, len(names))
                assert grouper is not None
                grouper.add(gpu_from_cells(cells, names), cells)
            out.data_lines += 1
        except BadLine:
            out.rejected.append(line)
    finish_group()
    _drop_cut_off_tail(out)
    return out


def _drop_cut_off_tail(out: CSVParse) -> None:
    """A last sample with fewer GPUs than the one before it was cut off mid-paste."""
    if len(out.samples) >= 2 and len(out.samples[-1]) < len(out.samples[-2]):
        out.samples.pop()
        out.cut_off = True


def _headerless(line: str, out: CSVParse) -> None:
    if SEP not in line:
        return
    for names in F.GPU_FIELD_LISTS:
        try:
            gpu = parse_gpu_line(line, names)
        except BadLine:
            continue
        out.data_lines += 1
        if not out.samples or any(g.key == gpu.key for g in out.samples[-1]):
            out.samples.append([])
        out.samples[-1].append(gpu)
        return
    try:
        proc = parse_app_line(line)
        if known(proc.pid) and str(proc.gpu_uuid).startswith(("GPU-", "MIG-")):
            out.processes.append(proc)
            out.saw_apps = True
            out.data_lines += 1
            return
    except BadLine:
        pass
    out.rejected.append(line)


def snapshot_cells_note(rejected: Sequence[str]) -> str:
    if not rejected:
        return ""
    first = rejected[0]
    width = len(first.split(SEP))
    return f"{len(rejected)} line(s) rejected (e.g. {width} values: {first[:60]!r})"


__all__ = ["BadLine", "CSVParse", "parse_csv_lines", "parse_gpu_line", "parse_app_line",
           "split_row", "header_fields", "NA"]
