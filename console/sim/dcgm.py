"""Simulated NVIDIA DCGM exporters: one `/metrics` page per simulated host (SIMULATED).

Each host reads the same state file as the `nvidia-smi` stand-in
(`<state-dir>/host-NN/sim-state.json`, see state.py), so a simulated crash
leaves the same stale picture (100% utilisation at ~0 MiB) in both. The page
uses the exporter's default counter names, its `# HELP`/`# TYPE` lines and
its label set (`gpu`, `UUID`, `pci_bus_id`, `device`, `modelName`,
`Hostname`, `DCGM_FI_DRIVER_VERSION`).

Control, for tests and the demo:
    POST /sim/xid?gpu=N&code=C   the GPU reports XID C from now on
    POST /sim/down               this host's exporter stops listening
"""
from __future__ import annotations

import asyncio
import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .nvidia_smi import DRIVER, derived
from .state import read_state

# (field, type, help) in the exporter's default order; the values are derived per GPU below.
COUNTERS = (
    ("DCGM_FI_DEV_SM_CLOCK", "gauge", "SM clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEM_CLOCK", "gauge", "Memory clock frequency (in MHz)."),
    ("DCGM_FI_DEV_MEMORY_TEMP", "gauge", "Memory temperature (in C)."),
    ("DCGM_FI_DEV_GPU_TEMP", "gauge", "GPU temperature (in C)."),
    ("DCGM_FI_DEV_POWER_USAGE", "gauge", "Power draw (in W)."),
    ("DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION", "counter", "Total energy consumption since boot (in mJ)."),
    ("DCGM_FI_DEV_PCIE_REPLAY_COUNTER", "counter", "Total number of PCIe retries."),
    ("DCGM_FI_DEV_GPU_UTIL", "gauge", "GPU utilization (in %)."),
    ("DCGM_FI_DEV_MEM_COPY_UTIL", "gauge", "Memory utilization (in %)."),
    ("DCGM_FI_DEV_ENC_UTIL", "gauge", "Encoder utilization (in %)."),
    ("DCGM_FI_DEV_DEC_UTIL", "gauge", "Decoder utilization (in %)."),
    ("DCGM_FI_DEV_XID_ERRORS", "gauge", "Value of the last XID error encountered."),
    ("DCGM_FI_DEV_FB_FREE", "gauge", "Framebuffer memory free (in MiB)."),
    ("DCGM_FI_DEV_FB_USED", "gauge", "Framebuffer memory used (in MiB)."),
    ("DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL", "counter", "Total number of NVLink bandwidth counters for all lanes."),
)


def host_name(index: int) -> str:
    return f"sim-node-{index:02d}"


def host_dir(state_dir: Path, index: int) -> Path:
    return Path(state_dir) / f"host-{index:02d}"


@dataclass
class SimExporter:
    """One simulated host's exporter."""

    index: int
    state_dir: Path
    gpu: str
    count: int
    xid: dict[int, int] = field(default_factory=dict)
    energy_mj: dict[int, float] = field(default_factory=dict)

    @property
    def hostname(self) -> str:
        return host_name(self.index)

    def values(self, g: dict[str, Any]) -> dict[str, float]:
        d = derived(g)
        i = int(g["index"])
        self.energy_mj[i] = self.energy_mj.get(i, 0.0) + d["power_draw_w"] * 1000.0
        free = max(0, int(g["memory_total_mib"]) - int(g["memory_used_mib"]))
        return {
            "DCGM_FI_DEV_SM_CLOCK": d["sm_mhz"],
            "DCGM_FI_DEV_MEM_CLOCK": 14001 if d["pstate"] == "P0" else 405,
            "DCGM_FI_DEV_MEMORY_TEMP": 0,
            "DCGM_FI_DEV_GPU_TEMP": d["temperature_c"],
            "DCGM_FI_DEV_POWER_USAGE": d["power_draw_w"],
            "DCGM_FI_DEV_TOTAL_ENERGY_CONSUMPTION": int(self.energy_mj[i]),
            "DCGM_FI_DEV_PCIE_REPLAY_COUNTER": 0,
            "DCGM_FI_DEV_GPU_UTIL": int(g.get("utilization_gpu", 0)),
            "DCGM_FI_DEV_MEM_COPY_UTIL": int(g.get("utilization_memory", 0)),
            "DCGM_FI_DEV_ENC_UTIL": 0,
            "DCGM_FI_DEV_DEC_UTIL": 0,
            "DCGM_FI_DEV_XID_ERRORS": self.xid.get(i, 0),
            "DCGM_FI_DEV_FB_FREE": free,
            "DCGM_FI_DEV_FB_USED": int(g["memory_used_mib"]),
            "DCGM_FI_DEV_NVLINK_BANDWIDTH_TOTAL": 0,
        }

    def page(self) -> str:
        state = read_state(self.state_dir, self.gpu, self.count)
        rows = []
        for g in state["gpus"]:
            labels = (f'gpu="{g["index"]}",UUID="{g["uuid"]}",pci_bus_id="{g["bus_id"]}",'
                      f'device="nvidia{g["index"]}",modelName="{g["name"]}",Hostname="{self.hostname}",'
                      f'DCGM_FI_DRIVER_VERSION="{DRIVER}"')
            rows.append((labels, self.values(g)))
        out = []
        for name, kind, help_text in COUNTERS:
            out.append(f"# HELP {name} {help_text}")
            out.append(f"# TYPE {name} {kind}")
            for labels, values in rows:
                value = values[name]
                out.append(f"{name}{{{labels}}} {value:.6f}" if isinstance(value, float) else f"{name}{{{labels}}} {value}")
        return "\n".join(out) + "\n"


async def serve(exporters: list[SimExporter], host: str = "127.0.0.1", base_port: int = 0) -> list[tuple[Any, int]]:
    """Start one aiohttp site per exporter; returns (runner, port) pairs."""
    from aiohttp import web

    started = []
    for n, exporter in enumerate(exporters):
        app = web.Application()
        runner = web.AppRunner(app, access_log=None)

        async def metrics(_request, exporter=exporter):
            return web.Response(text=exporter.page(), content_type="text/plain", charset="utf-8")

        async def xid(request, exporter=exporter):
            try:
                gpu, code = int(request.query["gpu"]), int(request.query["code"])
            except (KeyError, ValueError):
                return web.Response(status=400, text="want ?gpu=N&code=C\n")
            exporter.xid[gpu] = code
            return web.Response(text="ok\n")

        async def down(_request, runner=runner):
            asyncio.get_running_loop().call_later(0.05, lambda: asyncio.ensure_future(runner.cleanup()))
            return web.Response(text="going down\n")

        app.router.add_get("/metrics", metrics)
        app.router.add_post("/sim/xid", xid)
        app.router.add_post("/sim/down", down)
        await runner.setup()
        site = web.TCPSite(runner, host, base_port + n if base_port else 0)
        await site.start()
        port = site._server.sockets[0].getsockname()[1]  # the port the OS chose when asked for 0
        started.append((runner, port))
    return started


async def run(hosts: int, gpus_per_host: int, gpu: str, state_dir: Path, base_port: int = 0,
              xids: list[tuple[int, int, int]] = (), bind: str = "127.0.0.1") -> None:
    """Serve until cancelled; prints one JSON line with every host's port first."""
    exporters = []
    for i in range(hosts):
        d = host_dir(state_dir, i)
        d.mkdir(parents=True, exist_ok=True)
        exporters.append(SimExporter(i, d, gpu, gpus_per_host))
    for h, g, code in xids:
        if 0 <= h < hosts:
            exporters[h].xid[g] = code
    started = await serve(exporters, bind, base_port)
    print(json.dumps({"simulated": True, "exporters": [
        {"host": e.hostname, "port": port, "state_dir": str(e.state_dir)}
        for e, (_runner, port) in zip(exporters, started)]}), flush=True)
    try:
        await asyncio.Event().wait()
    finally:
        for runner, _port in started:
            await runner.cleanup()
