"""The live sampler reads the process list again when a GPU's memory moves, not on a clock.

Each read is a command on the host (a process of its own, the demo's simulated
nvidia-smi a Python start): on an idle host, re-reading a list that cannot have
changed was most of what an idle console cost. Every compute process holds
memory on its GPU, so a process that comes, goes or grows moves a memory
reading; a GPU whose memory reads N/A can't tell, and then the list is read as
often as the gap allows. These run the simulator's nvidia-smi on this machine.
"""
from __future__ import annotations

import asyncio
import os
import sys

from console.gpus import Sampler
from console.gpus.fields import GPU_FIELD_LISTS
from console.gpus.model import known
from console.hosts import LocalHost
from console.sim.hardware import find_gpu
from console.sim.state import IDLE_MIB, gpu_rows, write_state
from tests.gpus_standin import STANDIN

PID, MIB = 4242, 30000


class CountingHost(LocalHost):
    """This machine, counting the process-list reads started on it."""

    def __init__(self) -> None:
        super().__init__()
        self.apps_reads = 0

    async def run(self, argv, **kw):
        if any(a.startswith("--query-compute-apps") for a in argv):
            self.apps_reads += 1
        return await super().run(argv, **kw)


def _world(state_dir, process_on: int | None = None) -> None:
    """Two simulated GPUs, idle, or with one process holding MIB on GPU `process_on`."""
    gpus = gpu_rows(find_gpu("RTX PRO 6000 Blackwell"), 2)
    processes = []
    if process_on is not None:
        gpus[process_on]["memory_used_mib"] = IDLE_MIB + MIB
        processes = [{"pid": PID, "gpu_index": process_on, "gpu_uuid": gpus[process_on]["uuid"],
                      "used_memory_mib": MIB, "process_name": "python3"}]
    write_state(state_dir, {"status": "ready", "pid": os.getpid(), "gpus": gpus, "processes": processes})


def _smi(state_dir) -> list[str]:
    return [sys.executable, "-m", "console", "sim", "nvidia-smi", "--state-dir", str(state_dir)]


async def _until(sampler: Sampler, done) -> list:
    """Samples until `done(snapshot, samples)` says so (the test's own timeout guards a hang)."""
    out = []
    gen = sampler.snapshots()
    try:
        async with asyncio.timeout(60):
            async for snap in gen:
                out.append(snap)
                if done(snap, out):
                    break
    finally:
        await gen.aclose()
    return out


async def test_unchanged_memory_reads_the_list_once_and_a_new_process_is_read_at_once(tmp_path):
    _world(tmp_path)
    host = CountingHost()
    # no gap and no age limit: whatever read happens is the memory's doing
    sampler = Sampler(host, 0.1, smi_command=_smi(tmp_path), use_nvml=False, apps_min_gap_s=0,
                      apps_max_age_s=3600)
    seen = {}

    def step(snap, out):
        known = [s for s in out if s.processes_known]
        if len(known) == 10 and "reads" not in seen:     # ten samples of the same memory
            seen["reads"] = host.apps_reads
            _world(tmp_path, process_on=1)               # a process starts on GPU 1
        return bool(snap.processes)

    snaps = await _until(sampler, step)
    assert seen["reads"] == 1
    last = snaps[-1]
    assert [(p.pid, p.gpu_index, p.used_memory_mib) for p in last.processes] == [(PID, 1, MIB)]
    assert last.gpus[1].memory_used_mib == IDLE_MIB + MIB
    assert host.apps_reads == 2                          # the one read the move asked for
    assert sampler.apps_reads == host.apps_reads


async def test_a_list_older_than_its_age_limit_is_read_again_though_nothing_moved(tmp_path):
    _world(tmp_path, process_on=0)
    host = CountingHost()
    sampler = Sampler(host, 0.1, smi_command=_smi(tmp_path), use_nvml=False, apps_min_gap_s=0,
                      apps_max_age_s=0.2)
    snaps = await _until(sampler, lambda snap, out: host.apps_reads >= 3)
    assert len({tuple(g.memory_used_mib for g in s.gpus) for s in snaps}) == 1   # memory never moved
    assert [p.pid for p in snaps[-1].processes] == [PID]


async def test_memory_that_reads_na_reads_the_list_at_every_gap(tmp_path):
    # one GPU whose every reading is there but memory.used, as some drivers answer
    values = {"count": "1", "index": "0", "uuid": "GPU-aaaa", "name": "NVIDIA H100 80GB HBM3",
              "memory.used": "[N/A]", "memory.total": "81559", "pstate": "P8",
              "clocks_event_reasons.active": "0x0000000000000001", "pci.bus_id": "00000000:18:00.0"}
    fields = GPU_FIELD_LISTS[0]
    ticks = tmp_path / "ticks.csv"
    ticks.write_text(", ".join(fields) + "\n" + ", ".join(values.get(f, "0") for f in fields) + "\n")
    host = CountingHost()
    sampler = Sampler(host, 0.1, smi_command=[sys.executable, str(STANDIN), "--replay", str(ticks)],
                      use_nvml=False, apps_min_gap_s=0, apps_max_age_s=3600)
    snaps = await _until(sampler, lambda snap, out: host.apps_reads >= 3)
    assert snaps[-1].gpus and all(not known(s.gpus[0].memory_used_mib) for s in snaps if s.gpus)
