"""The `nvidia-smi` stand-in: the simulated GPUs, answered in nvidia-smi's own output forms.

It reads the simulator's state file on every sample (see state.py) and
derives what a driver would add: power from the load, temperature from the
power, clocks and P-state from whether the GPU is busy. The default table's
header line says SIMULATED; GPU names stay the real ones.
"""
from __future__ import annotations

import time
from datetime import datetime
from typing import Any, Callable

DRIVER = "580.95.05"
CUDA = "13.0"


class QueryError(ValueError):
    """A field nvidia-smi would refuse; the message is nvidia-smi's."""


def derived(g: dict[str, Any]) -> dict[str, Any]:
    """One GPU row with the driver-side values filled in."""
    util, mem_util = float(g.get("utilization_gpu", 0)), float(g.get("utilization_memory", 0))
    limit, idle = float(g["power_limit_w"]), float(g["idle_power_w"])
    busy = util > 0 or g["memory_used_mib"] > 100
    power = idle + (limit - idle) * (0.09 * util / 100 + 0.75 * mem_util / 100)
    return dict(g, power_draw_w=round(power, 2), temperature_c=int(round(30 + 45 * power / limit)),
                sm_mhz=g["max_sm_mhz"] if busy else g["idle_sm_mhz"], pstate="P0" if busy else "P8",
                throttle="0x0000000000000000" if busy else "0x0000000000000001")


# field -> (header unit or "", value(gpu, ctx) as a display string with unit)
def _mib(key: str) -> Callable[[dict, dict], str]:
    return lambda g, c: f"{int(g[key])} MiB"


GPU_FIELDS: dict[str, tuple[str, Callable[[dict, dict], str]]] = {
    "timestamp": ("", lambda g, c: c["timestamp"]),
    "driver_version": ("", lambda g, c: DRIVER),
    "count": ("", lambda g, c: str(c["count"])),
    "index": ("", lambda g, c: str(g["index"])),
    "name": ("", lambda g, c: g["name"]),
    "uuid": ("", lambda g, c: g["uuid"]),
    "serial": ("", lambda g, c: f"165{g['index']:010d}"),
    "pci.bus_id": ("", lambda g, c: g["bus_id"]),
    "persistence_mode": ("", lambda g, c: "Enabled"),
    "compute_mode": ("", lambda g, c: "Default"),
    "display_active": ("", lambda g, c: "Disabled"),
    "fan.speed": ("%", lambda g, c: "[N/A]"),
    "pstate": ("", lambda g, c: g["pstate"]),
    "utilization.gpu": ("%", lambda g, c: f"{int(g['utilization_gpu'])} %"),
    "utilization.memory": ("%", lambda g, c: f"{int(g['utilization_memory'])} %"),
    "memory.total": ("MiB", _mib("memory_total_mib")),
    "memory.used": ("MiB", _mib("memory_used_mib")),
    "memory.free": ("MiB", lambda g, c: f"{int(g['memory_total_mib'] - g['memory_used_mib'])} MiB"),
    "memory.reserved": ("MiB", lambda g, c: "505 MiB"),
    "temperature.gpu": ("", lambda g, c: str(g["temperature_c"])),
    "temperature.memory": ("", lambda g, c: "N/A"),
    "power.draw": ("W", lambda g, c: f"{g['power_draw_w']:.2f} W"),
    "power.limit": ("W", lambda g, c: f"{g['power_limit_w']:.2f} W"),
    "power.max_limit": ("W", lambda g, c: f"{g['power_limit_w']:.2f} W"),
    "clocks.sm": ("MHz", lambda g, c: f"{g['sm_mhz']} MHz"),
    "clocks.gr": ("MHz", lambda g, c: f"{g['sm_mhz']} MHz"),
    "clocks.mem": ("MHz", lambda g, c: "14001 MHz" if g["pstate"] == "P0" else "405 MHz"),
    "clocks.max.sm": ("MHz", lambda g, c: f"{g['max_sm_mhz']} MHz"),
    "clocks.max.gr": ("MHz", lambda g, c: f"{g['max_sm_mhz']} MHz"),
    "clocks.max.mem": ("MHz", lambda g, c: "14001 MHz"),
    "clocks_event_reasons.active": ("", lambda g, c: g["throttle"]),
    "ecc.errors.uncorrected.volatile.total": ("", lambda g, c: "0"),
    "mig.mode.current": ("", lambda g, c: "Disabled"),
}
GPU_ALIASES = {
    "gpu_name": "name", "gpu_uuid": "uuid", "gpu_bus_id": "pci.bus_id", "gpu_serial": "serial",
    "power.draw.instant": "power.draw", "power.draw.average": "power.draw",
    "enforced.power.limit": "power.limit", "power.default_limit": "power.limit",
    "clocks.current.sm": "clocks.sm", "clocks.current.graphics": "clocks.gr", "clocks.graphics": "clocks.gr",
    "clocks.current.memory": "clocks.mem", "clocks.memory": "clocks.mem",
    "clocks.max.graphics": "clocks.max.gr", "clocks.max.memory": "clocks.max.mem",
    "clocks.max.sms": "clocks.max.sm",
    "clocks_throttle_reasons.active": "clocks_event_reasons.active",
    "clocks_event_reasons_counters.active": "clocks_event_reasons.active",
    "persistence.mode": "persistence_mode", "temperature.gpu.tlimit": "temperature.memory",
}

APP_FIELDS: dict[str, tuple[str, Callable[[dict, dict], str]]] = {
    "timestamp": ("", lambda p, c: c["timestamp"]),
    "pid": ("", lambda p, c: str(p["pid"])),
    "process_name": ("", lambda p, c: p["process_name"]),
    "gpu_uuid": ("", lambda p, c: p["gpu_uuid"]),
    "gpu_name": ("", lambda p, c: c["gpus"][p["gpu_index"]]["name"]),
    "gpu_bus_id": ("", lambda p, c: c["gpus"][p["gpu_index"]]["bus_id"]),
    "gpu_serial": ("", lambda p, c: f"165{p['gpu_index']:010d}"),
    "used_memory": ("MiB", lambda p, c: f"{int(p['used_memory_mib'])} MiB"),
}
APP_ALIASES = {"name": "process_name", "used_gpu_memory": "used_memory"}


def _resolve(names: list[str], table: dict, aliases: dict) -> list[tuple[str, str]]:
    out = []
    for name in names:
        key = aliases.get(name, name)
        if key not in table:
            raise QueryError(f'Field "{name}" is not a valid field to query.')
        out.append((name, key))
    return out


def _cell(text: str, unit: str, nounits: bool) -> str:
    if nounits and unit and text.endswith(" " + unit):
        return text[: -len(unit) - 1]
    return text


def _context(state: dict[str, Any]) -> dict[str, Any]:
    now = datetime.now()
    return {"timestamp": now.strftime("%Y/%m/%d %H:%M:%S.") + f"{now.microsecond // 1000:03d}",
            "count": len(state["gpus"]), "gpus": state["gpus"]}


def query_csv(state: dict[str, Any], names: list[str], header: bool, nounits: bool,
              apps: bool = False, indices: set[int] | None = None) -> list[str]:
    """The lines of one `--query-gpu` / `--query-compute-apps` sample."""
    table, aliases = (APP_FIELDS, APP_ALIASES) if apps else (GPU_FIELDS, GPU_ALIASES)
    fields = _resolve(names, table, aliases)
    ctx = _context(state)
    lines = []
    if header:
        lines.append(", ".join(f"{name} [{table[key][0]}]" if table[key][0] else name for name, key in fields))
    rows = state.get("processes", []) if apps else [derived(g) for g in state["gpus"]]
    for row in rows:
        where = row.get("gpu_index") if apps else row["index"]
        if indices is not None and where not in indices:
            continue
        lines.append(", ".join(_cell(table[key][1](row, ctx), table[key][0], nounits) for _, key in fields))
    return lines


def list_gpus(state: dict[str, Any]) -> list[str]:
    return [f"GPU {g['index']}: {g['name']} (UUID: {g['uuid']})" for g in state["gpus"]]


def _short(name: str, width: int = 29) -> str:
    return name if len(name) <= width else name[: width - 3] + "..."


def table(state: dict[str, Any]) -> list[str]:
    """The default `nvidia-smi` table (the 550+ layout, 89 columns inside)."""
    rule = "+" + "-" * 89 + "+"
    grid = "+" + "-" * 41 + "+" + "-" * 24 + "+" + "-" * 22 + "+"
    head = f" NVIDIA-SMI {DRIVER}  SIMULATED  Driver Version: {DRIVER}      CUDA Version: {CUDA}"
    out = [datetime.now().strftime("%a %b %d %H:%M:%S %Y       "), rule, "|" + head.ljust(89) + "|", grid,
           "| GPU  Name                 Persistence-M | Bus-Id          Disp.A | Volatile Uncorr. ECC |",
           "| Fan  Temp   Perf          Pwr:Usage/Cap |           Memory-Usage | GPU-Util  Compute M. |",
           "|                                         |                        |               MIG M. |",
           "|" + "=" * 41 + "+" + "=" * 24 + "+" + "=" * 22 + "|"]
    for raw in state["gpus"]:
        g = derived(raw)
        out.append(f"|{g['index']:>4}  {_short(g['name']):<29}  On  |{g['bus_id']:>19} Off |{'0':>21} |")
        out.append(f"| N/A  {g['temperature_c']:>3}C    {g['pstate']:<2}  {int(round(g['power_draw_w'])):>13}W / "
                   f"{int(g['power_limit_w']):>4}W |"
                   f"{int(g['memory_used_mib']):>8}MiB / {int(g['memory_total_mib']):>6}MiB |"
                   f"{int(g['utilization_gpu']):>7}%      Default |")
        out.append("|" + " " * 41 + "|" + " " * 24 + "|" + "Disabled".rjust(21) + " |")
        out.append(grid)
    out += ["", rule, "| Processes:".ljust(90) + "|",
            "|  GPU   GI   CI              PID   Type   Process name                        GPU Memory |",
            "|        ID   ID                                                               Usage      |",
            "|" + "=" * 89 + "|"]
    procs = state.get("processes", [])
    if not procs:
        out.append("|  No running processes found".ljust(90) + "|")
    for p in procs:
        out.append(f"|{p['gpu_index']:>5}   N/A  N/A  {p['pid']:>14}      C   {_short(p['process_name'], 36):<36}"
                   f"{int(p['used_memory_mib']):>7}MiB |")
    out.append(rule)
    return out


def sample_lines(read_state: Callable[[], dict[str, Any]], mode: str, names: list[str], header: bool,
                 nounits: bool, indices: set[int] | None) -> list[str]:
    state = read_state()
    if mode == "list":
        return list_gpus(state)
    if mode == "table":
        return table(state)
    return query_csv(state, names, header, nounits, apps=(mode == "apps"), indices=indices)


def run_loop(read_state: Callable[[], dict[str, Any]], write: Callable[[str], None], mode: str,
             names: list[str], header: bool, nounits: bool, indices: set[int] | None,
             interval_s: float | None, max_samples: int | None = None) -> None:
    """One sample, or one every `interval_s` (header once, as nvidia-smi -lms prints it)."""
    first, taken = True, 0
    next_at = time.monotonic()
    while True:
        lines = sample_lines(read_state, mode, names, header and first, nounits, indices)
        write("\n".join(lines) + ("\n" if lines else ""))
        first, taken = False, taken + 1
        if interval_s is None or (max_samples is not None and taken >= max_samples):
            return
        next_at += interval_s
        time.sleep(max(0.0, next_at - time.monotonic()))
