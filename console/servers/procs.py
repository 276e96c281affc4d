"""What is already running on a host: inference processes, listening ports, GPU memory."""
from __future__ import annotations

import re
from dataclasses import asdict, dataclass
from typing import Any

from ..hosts import Host, HostError

SERVER_PATTERN = re.compile(
    r"sglang\.launch_server|sglang serve|\bvllm serve|vllm\.entrypoints|llama-server|trtllm-serve"
    r"|text-generation-launcher|\bgpudeck sim serve|console sim serve")


@dataclass
class Proc:
    pid: int
    pgid: int
    elapsed_s: int | None
    command: str

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


async def processes(host: Host) -> list[Proc]:
    # -ww: whole command lines whatever COLUMNS says (a terminal exports it; a cut line hides a server)
    result = await host.run(["ps", "-ww", "-eo", "pid=,pgid=,etimes=,args="], timeout=20)
    out = []
    for line in result.stdout.splitlines():
        parts = line.split(None, 3)
        if len(parts) == 4 and parts[0].isdigit():
            out.append(Proc(int(parts[0]), int(parts[1]), int(parts[2]) if parts[2].isdigit() else None, parts[3]))
    return out


async def inference_processes(host: Host) -> list[Proc]:
    """sglang / vLLM / llama.cpp / TensorRT-LLM servers, one per process group."""
    seen: set[int] = set()
    found = []
    for proc in await processes(host):
        if SERVER_PATTERN.search(proc.command) and proc.pgid not in seen:
            seen.add(proc.pgid)
            found.append(proc)
    return found


async def port_in_use(host: Host, port: int) -> bool | None:
    """True/False from `ss`; None when the host can't tell us."""
    try:
        result = await host.run(["ss", "-ltnH"], timeout=15)
    except HostError:
        return None
    if result.returncode != 0:
        return None
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].rsplit(":", 1)[-1] == str(port):
            return True
    return False


_SS_PID = re.compile(r"pid=(\d+)")


async def port_holders(host: Host, port: int) -> list[int]:
    """Pids listening on `port`, as far as `ss -p` may tell us (often only our own)."""
    try:
        result = await host.run(["ss", "-ltnpH"], timeout=15)
    except HostError:
        return []
    pids: set[int] = set()
    for line in result.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 4 and fields[3].rsplit(":", 1)[-1] == str(port):
            pids.update(int(p) for p in _SS_PID.findall(line))
    return sorted(pids)


@dataclass
class GPUHolder:
    pid: int
    used_mib: int | None
    name: str


async def gpu_holders(host: Host) -> list[GPUHolder] | None:
    """Compute processes holding GPU memory; None when nvidia-smi is absent or failing."""
    try:
        result = await host.run(["nvidia-smi", "--query-compute-apps=pid,used_memory,process_name",
                                 "--format=csv,noheader,nounits"], timeout=20)
    except HostError:
        return None
    if result.returncode != 0:
        return None
    holders = []
    for line in result.stdout.splitlines():
        parts = [p.strip() for p in line.split(",", 2)]
        if len(parts) == 3 and parts[0].isdigit():
            used = int(parts[1]) if parts[1].isdigit() else None
            holders.append(GPUHolder(int(parts[0]), used, parts[2]))
    return holders


def describe_holders(holders: list[GPUHolder], procs: list[Proc]) -> str:
    """'GPUs hold 61 GiB: pid 4242 `python -m sglang.launch_server` still running'."""
    by_pid = {p.pid: p for p in procs}
    known = [h.used_mib for h in holders if h.used_mib is not None]
    total = f"{sum(known) / 1024:.0f} GiB" if known else "memory"
    pids = sorted({h.pid for h in holders})
    first = by_pid.get(pids[0]) if pids else None
    command = (first.command if first else holders[0].name)[:60]
    more = f" and {len(pids) - 1} more" if len(pids) > 1 else ""
    return f"GPUs hold {total}: pid {pids[0]} `{command}`{more} still running"
