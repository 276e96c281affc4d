"""One row per host with sums and worst flags, sortable and filterable.

The one per-host summary: the Prometheus fleet view, its CLI table and the
GPUs tab's fleet of profiles all build `HostRow`s with `host_row`, so they
say the same thing about a host. Unknown sums stay None (printed N/A), never 0.
"""
from __future__ import annotations

import time
from dataclasses import dataclass, field

from ..fmt import UNKNOWN
from .dcgm import xid_meaning
from .flags import BUSY, IDLE, STALE
from .model import OK, UNREACHABLE, WAITING, Snapshot, known
from .text import age

# Worst first: what an operator must see before anything else.
SEVERITY = ("unreachable", "xid", "stale", "no signal", "hot", "throttled", "orphan-memory", "busy", "idle", "ok")
SORT_KEYS = ("host", "state", "gpus", "util", "memory", "temp", "power", "age")


@dataclass
class HostRow:
    """One host: its state, sums over its GPUs, the worst flag, and how current the numbers are."""

    host: str
    state: str                          # ok | unreachable | waiting | ...
    gpus: int | None
    util_pct: float | None              # mean over GPUs that report it
    memory_used_mib: float | None
    memory_total_mib: float | None
    temp_max_c: float | None
    power_w: float | None
    stale: int
    busy: int
    xids: list[tuple[int, int]] = field(default_factory=list)     # (gpu index, code)
    worst: str = "ok"
    age_s: float | None = None
    sample_stale: bool = False
    message: str = ""
    simulated: bool = False
    reachable: bool | None = True       # None: no answer yet; False: down, or its link is (the chip says so)
    idle: int = 0
    taken_at: float | None = None       # when its numbers were read; `age_s` is as of when the row was built

    @property
    def notes(self) -> str:
        """What the operator reads after the numbers: stale counters, XIDs with their meaning, why not current."""
        out = [f"{self.stale} STALE"] if self.stale else []
        out += [f"XID {code} on GPU {gpu}: {xid_meaning(code)}" for gpu, code in self.xids]
        if self.message:
            out.append(self.message)
        return "; ".join(out)

    def to_json(self) -> dict:
        doc = dict(self.__dict__)
        doc["xids"] = [{"gpu": g, "code": c, "meaning": xid_meaning(c)} for g, c in self.xids]
        return doc


def host_row(snap: Snapshot | None, now: float, name: str | None = None, link_down: bool = False) -> HostRow:
    """`name` overrides the snapshot's host (a profile's name); `link_down`: the host's runtime
    has lost its link, so its last sample, re-shown marked stale, does not make it reachable."""
    if snap is None:
        return HostRow(host=name or "?", state=WAITING, gpus=None, util_pct=None, memory_used_mib=None,
                       memory_total_mib=None, temp_max_c=None, power_w=None, stale=0, busy=0,
                       worst=WAITING, reachable=None, message="no sample yet")
    gpus = snap.gpus
    utils, temps, used, total, power, xids = [], [], [], [], [], []
    flags: set[str] = set()
    stale = busy = idle = 0
    for g in gpus:
        if known(g.util_gpu_pct):
            utils.append(g.util_gpu_pct)
        if known(g.temperature_c):
            temps.append(g.temperature_c)
        if known(g.memory_used_mib):
            used.append(g.memory_used_mib)
        if known(g.memory_total_mib):
            total.append(g.memory_total_mib)
        if known(g.power_draw_w):
            power.append(g.power_draw_w)
        if known(g.xid) and g.xid > 0:
            xids.append((g.index if known(g.index) else -1, g.xid))
        for f in g.flags:
            flags.add("xid" if f.startswith("xid-") else f)
        stale += STALE in g.flags
        busy += BUSY in g.flags
        idle += IDLE in g.flags
    if snap.state == UNREACHABLE:
        worst = "unreachable"
    elif snap.sample_stale and not flags & {"xid", STALE}:
        worst = "no signal"
    else:
        worst = next((s for s in SEVERITY if s in flags), "ok" if snap.state == OK else snap.state)
    return HostRow(
        host=name or snap.host or "?", state=snap.state, gpus=len(gpus) if snap.state == OK else None,
        util_pct=round(sum(utils) / len(utils), 1) if utils else None,
        memory_used_mib=float(sum(used)) if used else None, memory_total_mib=float(sum(total)) if total else None,
        temp_max_c=max(temps) if temps else None, power_w=float(sum(power)) if power else None,
        stale=stale, busy=busy, idle=idle, xids=xids, worst=worst,
        age_s=snap.age(now), sample_stale=snap.sample_stale,
        message=snap.stale_reason if snap.sample_stale else snap.message, simulated=snap.simulated,
        reachable=snap.state != UNREACHABLE and not link_down, taken_at=snap.taken_at)


def host_rows(hosts: list[Snapshot], now: float | None = None) -> list[HostRow]:
    now = time.time() if now is None else now
    return [host_row(s, now) for s in hosts]


def aged(rows: list[HostRow], now: float) -> list[HostRow]:
    """The rows with `age_s` as of `now` (rows are built once per sample and shown for longer)."""
    for row in rows:
        if row.taken_at is not None:
            row.age_s = max(0.0, now - row.taken_at)
    return rows


def _key(row: HostRow, column: str):
    missing = float("-inf")
    return {
        "host": row.host,
        "state": SEVERITY.index(row.worst) if row.worst in SEVERITY else len(SEVERITY),
        "gpus": row.gpus if row.gpus is not None else missing,
        "util": row.util_pct if row.util_pct is not None else missing,
        "memory": row.memory_used_mib if row.memory_used_mib is not None else missing,
        "temp": row.temp_max_c if row.temp_max_c is not None else missing,
        "power": row.power_w if row.power_w is not None else missing,
        "age": row.age_s if row.age_s is not None else missing,
    }[column]


def sort_rows(rows: list[HostRow], column: str = "state", descending: bool = False) -> list[HostRow]:
    if column not in SORT_KEYS:
        raise ValueError(f"cannot sort by {column!r}: one of {', '.join(SORT_KEYS)}")
    return sorted(rows, key=lambda r: (_key(r, column), r.host), reverse=descending)


def filter_rows(rows: list[HostRow], text: str = "", stale_only: bool = False, xid_only: bool = False) -> list[HostRow]:
    text = text.lower().strip()
    out = []
    for r in rows:
        if text and text not in r.host.lower() and text not in r.worst and text not in r.message.lower():
            continue
        if stale_only and not (r.stale or r.sample_stale or r.state == UNREACHABLE):
            continue
        if xid_only and not r.xids:
            continue
        out.append(r)
    return out


def _n(value, fmt: str = "{:.0f}") -> str:
    return UNKNOWN if value is None else fmt.format(value)


def host_lines(sample, now: float | None = None) -> list[str]:
    """The CLI's fleet table."""
    now = time.time() if now is None else now
    if sample.error:
        return [f"Prometheus: {sample.error}"]
    rows = sort_rows(aged(list(sample.rows), now), "state")
    sim = " · SIMULATED" if sample.simulated else ""
    gpus = sum(r.gpus or 0 for r in rows)
    lines = [f"{len(rows)} host(s) · {gpus} GPU(s) from Prometheus{sim}"
             + (f" · {sample.unreadable_line}" if getattr(sample, "unreadable", 0) else ""),
             f"{'host':<28} {'state':<12} {'GPUs':>4} {'util':>5} {'memory GiB':>15} {'max C':>5} {'power W':>8} "
             f"{'age':>7}  notes"]
    for r in rows:
        mem = (UNKNOWN if r.memory_used_mib is None else f"{r.memory_used_mib / 1024:.0f}") + "/" + \
              (UNKNOWN if r.memory_total_mib is None else f"{r.memory_total_mib / 1024:.0f}")
        host = r.host if len(r.host) <= 28 else r.host[:27] + "…"
        lines.append(f"{host:<28} {r.worst:<12} {_n(r.gpus):>4} {_n(r.util_pct, '{:.0f}%'):>5} {mem:>15} "
                     f"{_n(r.temp_max_c):>5} {_n(r.power_w):>8} {age(r.age_s):>7}  {r.notes}")
    lines.append("not shown by DCGM: per-process GPU memory and process names")
    return lines
