"""The driver's word on a crash: NVIDIA Xid / NVRM lines and amdgpu faults in the kernel log.

A log says what the server noticed; the kernel says what the GPU did. An Xid
79 (the GPU fell off the bus), 13/31/43 (illegal access, MMU fault, a kernel
stopped), 48 (double-bit ECC) or 119/120 (GSP timeout or error) in the
window of a crash outranks whatever phrase the server's log ended on.

The kernel log is read on the crash's own host (a local `Host` or an SSH one:
the same `run`), with `journalctl -k --since --until`, or `dmesg` where
journalctl has nothing; where neither can be read the answer says so and the
verdict stands on the log alone. Never raises for an unreadable log.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field, replace
from datetime import datetime, timedelta, timezone
from typing import Any, Iterable, Protocol, Sequence

from .verdict import DRIVER, TriageResult

MAX_TEXT = 1 << 20  # bytes of kernel log read at most
TIMEOUT = 8.0

# Xid -> (class, what it means); those that outrank the log's phrase
XID_MEANING: dict[int, tuple[str, str]] = {
    79: ("gpu-fault", "the GPU fell off the bus"),
    48: ("gpu-fault", "a double-bit ECC error in GPU memory"),
    119: ("gpu-fault", "the GPU's GSP did not answer (RPC timeout)"),
    120: ("gpu-fault", "the GPU's GSP reported an error"),
    13: ("cuda-illegal-address", "a graphics engine exception (illegal instruction or access in a kernel)"),
    31: ("cuda-illegal-address", "a GPU memory page fault (MMU fault)"),
    43: ("cuda-illegal-address", "the GPU stopped a faulting kernel"),
}
# how much an event outranks another: the bus and memory first, faults of one kernel last
RANK = {79: 6, 48: 5, 119: 4, 120: 4, 31: 3, 13: 3, 43: 2}

_XID = re.compile(r"NVRM: Xid \(PCI:([0-9a-fA-F:.]+)\): ([0-9]+),\s*(.*)")
_PID = re.compile(r"pid='?([0-9]+)'?")
_NAME = re.compile(r"name=([^,\s]+)")
_FALLEN = re.compile(r"fallen off the bus")
_GSP = re.compile(r"NVRM: .*(?:GSP Timeout|_kgspLogRpcTimeout|Timeout waiting for RPC from GSP)")
_AMD = re.compile(r"amdgpu.*(?:page fault|PROTECTION_FAULT_STATUS|ring [^ ]+ timeout|GPU reset begin|"
                  r"Memory access fault)")
_ISO = re.compile(r"^(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(?:[.,]\d+)?([+-]\d{2}:?\d{2}|Z)?")


@dataclass(frozen=True)
class DriverEvent:
    """One kernel-log line about a GPU."""

    vendor: str  # "nvidia" or "amd"
    xid: int | None
    cls: str | None  # the class it outranks the log with, or None (noted only)
    meaning: str
    pci: str = ""
    pid: int | None = None
    process: str = ""
    line: str = ""
    when: datetime | None = None

    @property
    def rank(self) -> int:
        if self.xid is not None:
            return RANK.get(self.xid, 0)
        return 6 if self.meaning.startswith("the GPU fell off") else (4 if "GSP" in self.meaning else 1)


@dataclass
class KernelLog:
    """What was read of a host's kernel log, and how (or why not)."""

    text: str = ""
    source: str = ""  # "journalctl", "dmesg", a file name, or "" when nothing could be read
    notes: list[str] = field(default_factory=list)

    @property
    def readable(self) -> bool:
        return bool(self.source)


class _Host(Protocol):
    async def run(self, argv: Sequence[str], *, timeout: float | None = None,
                  input: str | None = None) -> Any: ...


def parse(text: str) -> list[DriverEvent]:
    """The GPU events of a kernel log text (journalctl, dmesg or as pasted)."""
    events: list[DriverEvent] = []
    fallen_seen = False
    for raw in text.splitlines():
        line = raw.strip()
        when = _time_of(line)
        xid = _XID.search(line)
        if xid:
            code = int(xid.group(2))
            cls, meaning = XID_MEANING.get(code, (None, f"Xid {code}"))
            rest = xid.group(3)
            pid = _PID.search(rest)
            name = _NAME.search(rest)
            events.append(DriverEvent("nvidia", code, cls, meaning, xid.group(1),
                                      int(pid.group(1)) if pid else None,
                                      name.group(1).strip("'") if name else "", line[:400], when))
            fallen_seen = fallen_seen or code == 79
            continue
        if _FALLEN.search(line) and not fallen_seen:
            events.append(DriverEvent("nvidia", None, "gpu-fault", "the GPU fell off the bus", line=line[:400],
                                      when=when))
            fallen_seen = True
        elif _GSP.search(line):
            events.append(DriverEvent("nvidia", None, "gpu-fault", "the GPU's GSP did not answer (RPC timeout)",
                                      line=line[:400], when=when))
        elif _AMD.search(line):
            events.append(DriverEvent("amd", None, "cuda-illegal-address", "an amdgpu memory fault (page fault)",
                                      line=line[:400], when=when))
    return events


def in_window(events: Iterable[DriverEvent], since: datetime | None, until: datetime | None) -> list[DriverEvent]:
    """Events inside [since, until]; an event whose time cannot be read is kept (the reader's command
    already cut the window)."""
    out = []
    for event in events:
        if event.when is not None and ((since is not None and event.when < since) or
                                       (until is not None and event.when > until)):
            continue
        out.append(event)
    return out


def decisive(events: Iterable[DriverEvent]) -> DriverEvent | None:
    """The event that outranks the log: the gravest one with a class."""
    ranked = [e for e in events if e.cls is not None]
    return max(ranked, key=lambda e: (e.rank, -(e.when.timestamp() if e.when else 0))) if ranked else None


def apply(result: TriageResult, events: Sequence[DriverEvent], log: KernelLog | None = None) -> TriageResult:
    """The log's verdict, outranked by the driver where it reported a GPU fault; a verdict on a
    stop that was asked for stays (a stop is never a crash)."""
    weighed = replace(result, sources=list(result.sources), evidence=list(result.evidence),
                      suspicious=list(result.suspicious), kinds=list(result.kinds))
    if log is not None and not log.readable:
        weighed.evidence.append("kernel log: not readable (" + "; ".join(log.notes) + ")" if log.notes
                                else "kernel log: not readable")
        return weighed
    event = decisive(events)
    where = f" ({log.source})" if log is not None and log.source else ""
    if event is None:
        weighed.evidence.append(f"kernel log{where}: no GPU fault in the crash's window")
        return weighed
    if DRIVER not in weighed.sources:
        weighed.sources.insert(0, DRIVER)
    name = f"Xid {event.xid}" if event.xid is not None else event.vendor
    weighed.evidence.insert(0, f"kernel log{where}: {name}: {event.meaning}")
    if weighed.state == "stopped" and not weighed.crashed:
        return weighed  # an orderly stop: the fault is noted, the stop is not a crash
    said = f" (the log said: {result.cls} at line {result.line})" if result.line is not None else ""
    weighed.cls, weighed.state = event.cls or weighed.cls, "crashed"
    weighed.decided_by = f"driver: {name}"
    weighed.summary = f"the driver reported {name}: {event.meaning}{said}"
    weighed.excerpt = [event.line] + list(result.excerpt)[:8]
    weighed.confidence = max(weighed.confidence, 0.97)
    weighed.suspicious = []
    return weighed


def window_around(moment: datetime, before: timedelta = timedelta(minutes=15),
                  after: timedelta = timedelta(minutes=2)) -> tuple[datetime, datetime]:
    return moment - before, moment + after


async def read(host: _Host, since: datetime, until: datetime) -> KernelLog:
    """The kernel log of `host` between `since` and `until`: journalctl, else dmesg (filtered by its
    ISO times); a log neither can read is returned unreadable, with why."""
    log = KernelLog()
    stamp = "%Y-%m-%d %H:%M:%S"
    journal = ["journalctl", "-k", "--no-pager", "-o", "short-iso", "--utc",
               "--since", since.astimezone(timezone.utc).strftime(stamp),
               "--until", until.astimezone(timezone.utc).strftime(stamp)]
    result = await _run(host, journal)
    if result is not None and result[0] == 0 and _has_entries(result[1]):
        log.text, log.source = result[1][:MAX_TEXT], "journalctl"
        return log
    log.notes.append("journalctl: " + (_why(result) or "no entries"))
    result = await _run(host, ["dmesg", "--time-format", "iso"])
    if result is not None and result[0] == 0:
        lines = [line for line in result[1][-MAX_TEXT:].splitlines()
                 if (t := _time_of(line)) is None or since <= t <= until]
        log.text, log.source = "\n".join(lines), "dmesg"
        return log
    log.notes.append("dmesg: " + (_why(result) or "failed"))
    return log


def read_file(path: str, since: datetime | None = None, until: datetime | None = None) -> tuple[KernelLog, list[DriverEvent]]:
    """A saved kernel log (journalctl or dmesg output), and its GPU events in the window."""
    try:
        with open(path, "rb") as handle:
            text = handle.read(MAX_TEXT).decode("utf-8", "replace")
    except OSError as exc:
        return KernelLog(notes=[f"{path}: {exc.strerror or exc}"]), []
    log = KernelLog(text, path.rsplit("/", 1)[-1])
    return log, in_window(parse(text), since, until)


async def _run(host: _Host, argv: list[str]) -> tuple[int, str, str] | None:
    try:
        result = await host.run(argv, timeout=TIMEOUT)
    except Exception as exc:  # a missing command, a refused SSH, a timeout: the log is unreadable, not an error
        return (-1, "", str(exc)[:200])
    return int(getattr(result, "returncode", -1)), str(getattr(result, "stdout", "")), str(getattr(result, "stderr", ""))


def _has_entries(stdout: str) -> bool:
    return any(line.strip() and not line.startswith("-- ") for line in stdout.splitlines())


def _why(result: tuple[int, str, str] | None) -> str:
    if result is None:
        return ""
    text = (result[2] or result[1]).strip().splitlines()
    return text[0][:160] if text else (f"exit status {result[0]}" if result[0] else "")


def _time_of(line: str) -> datetime | None:
    """The ISO time a journalctl (short-iso) or dmesg (--time-format iso) line starts with."""
    found = _ISO.match(line)
    if not found:
        return None
    zone = found.group(2) or "+00:00"
    zone = "+00:00" if zone == "Z" else (zone if ":" in zone else zone[:3] + ":" + zone[3:])
    try:
        return datetime.fromisoformat(found.group(1) + zone)
    except ValueError:
        return None
