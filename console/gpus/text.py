"""Plain-text forms of GPU values, shared by the CLI table and the TUI widgets.

Every formatter takes NA and prints "N/A"; none prints 0 for an unknown.
"""
from __future__ import annotations

from typing import Any

from ..fmt import UNKNOWN
from ..safe_text import clean_line
from .model import Snapshot, known


def gib(mib: Any) -> str:
    return f"{mib / 1024:.1f}" if known(mib) else UNKNOWN


def memory(used: Any, total: Any) -> str:
    return f"{gib(used)}/{gib(total)}G"


def pct(value: Any) -> str:
    return f"{value:g}%" if known(value) else UNKNOWN


def temp(value: Any) -> str:
    return f"{value:g}C" if known(value) else UNKNOWN


def watts(value: Any) -> str:
    return f"{value:.0f}" if known(value) else UNKNOWN


def power(draw: Any, limit: Any) -> str:
    return f"{watts(draw)}/{watts(limit)}W"


def plain(value: Any) -> str:
    return str(value) if known(value) else UNKNOWN


def mib(value: Any) -> str:
    return f"{value:g} MiB" if known(value) else UNKNOWN


def age(seconds: float | None) -> str:
    """A sample's age, in the console's one duration format (tenths under ten seconds)."""
    from console.fmt import duration

    return duration(seconds, tenths=True)


def flag_label(flag: str, reasons: list[str] | None = None) -> str:
    if flag.startswith("xid-"):
        return "XID " + flag[4:]
    label = flag.upper()
    if flag == "throttled" and reasons:
        label += " (" + ", ".join(reasons) + ")"
    return label


def table(snap: Snapshot, now: float) -> str:
    """The CLI's view of one snapshot."""
    from .flags import stale_warning

    lines = []
    where = f"{snap.host} · " if snap.host else ""
    if snap.state != "ok":
        lines.append(f"{where}{snap.state}: {clean_line(snap.message)}")
        return "\n".join(lines)
    if not snap.gpus:
        lines.append("GPUs: none in this output")
    head = f"{'GPU':>3}  {'Name':<28} {'Util':>5} {'Memory':>14} {'Temp':>5} {'Power':>10} {'SM MHz':>6} {'P':>3}  Flags"
    if snap.gpus:
        lines.append(head)
    for g in snap.gpus:
        name = clean_line(plain(g.name))
        name = name if len(name) <= 28 else name[:27] + "…"
        flags = " ".join(flag_label(f, g.throttle_reasons) for f in g.flags)
        lines.append(f"{plain(g.index):>3}  {name:<28} {pct(g.util_gpu_pct):>5} {memory(g.memory_used_mib, g.memory_total_mib):>14} "
                     f"{temp(g.temperature_c):>5} {power(g.power_draw_w, g.power_limit_w):>10} "
                     f"{plain(g.sm_clock_mhz):>6} {plain(g.pstate):>3}  {flags}")
    warning = stale_warning(snap)
    if warning:
        lines += ["", warning]
    lines.append("")
    if not snap.processes_known:
        lines.append("Processes: unknown (not in this output)")
    elif not snap.processes:
        lines.append("Processes: none")
    else:
        lines.append(f"{'PID':>8}  {'GPU':>3}  {'Memory':>10}  Command")
        for p in snap.processes:
            lines.append(f"{plain(p.pid):>8}  {plain(p.gpu_index):>3}  {mib(p.used_memory_mib):>10}  {clean_line(plain(p.name))}")
    tail = []
    if snap.taken_at is not None:
        tail.append(f"sample {age(snap.age(now))} ago")
    if snap.sample_stale:
        tail.append(f"NO SIGNAL: {clean_line(snap.stale_reason)}")
    if snap.simulated:
        tail.append("SIMULATED")
    if snap.message and snap.source == "file":
        tail.append(clean_line(snap.message))
    if tail:
        lines += ["", " · ".join(tail)]
    return "\n".join(clean_line(line) for line in lines)  # every field came from outside
