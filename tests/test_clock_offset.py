"""A host's clock offset over the real test sshd: one `date +%s.%N` round trip, offset = remote − midpoint,
off by at most half the round trip; a host whose clock runs 37.5 s ahead (a stand-in `date`) reads so, and the
sweep's GPU watch keeps the offset in the run's timeline."""
from __future__ import annotations

import asyncio
import stat
from pathlib import Path

from console.bench.gpu_watch import GpuWatch
from console.gpus.sampler import Sampler
from console.hosts import SSHHost
from console.hosts.clock_offset import measure
from console.store.timeline import TimelineWriter
from tests.gpus_standin import standin_command

AHEAD_S = 37.5


def _date_ahead(tmp_path: Path, seconds: float) -> list[str]:
    """A `date +%s.%N` whose clock runs `seconds` ahead of the machine's."""
    script = tmp_path / "date-ahead"
    script.write_text(f"#!/bin/sh\nexec python3 -c 'import time; print(\"%.9f\" % (time.time() + {seconds}))'\n")
    script.chmod(script.stat().st_mode | stat.S_IXUSR)
    return [str(script), "+%s.%N"]


async def test_the_offset_of_a_host_clock_ahead_is_measured_within_half_the_round_trip(ssh_profile, tmp_path):
    host = SSHHost(ssh_profile)
    try:
        same = await measure(host)                               # the real `date`, on the same machine's clock
        ahead = await measure(host, _date_ahead(tmp_path, AHEAD_S))
    finally:
        await host.close()
    assert same.offset_s is not None and ahead.offset_s is not None, (same, ahead)
    # the remote read lies between send and answer: the true offset is within the error, by construction
    assert abs(same.offset_s) <= same.error_s + 1e-5
    assert abs(ahead.offset_s - AHEAD_S) <= ahead.error_s + 1e-5
    assert ahead.line().startswith(f"{host.name} clock +37.")


async def test_a_host_whose_date_gives_no_time_has_no_offset_and_says_why(ssh_profile, tmp_path):
    host = SSHHost(ssh_profile)
    try:
        found = await measure(host, ["sh", "-c", "echo not-a-time"])
    finally:
        await host.close()
    assert found.offset_s is None and found.error_s is None and "gave no time" in found.why


async def test_the_sweeps_gpu_watch_over_ssh_records_the_hosts_offset_in_the_timeline(ssh_profile, tmp_path):
    host = SSHHost(ssh_profile)
    seen = asyncio.Event()

    class Watch(GpuWatch):
        def add(self, snap) -> None:
            super().add(snap)
            seen.set()

    sampler = Sampler(host, 0.2, smi_command=standin_command("ticks-busy-8x.csv", None))
    watch = Watch(sampler, TimelineWriter(None), clock_command=tuple(_date_ahead(tmp_path, AHEAD_S)))
    watch.start()
    try:
        async with asyncio.timeout(60):
            await seen.wait()
    finally:
        await watch.close()
        await host.close()
    clock = watch.timeline.meta["clock"]
    assert clock["host"] == host.name and abs(clock["offset_s"] - AHEAD_S) <= clock["error_s"] + 1e-5
    assert watch.timeline.series["gpu"].points      # the samples came after it, over the same connection


def test_bench_show_names_the_hosts_clock_offset(tmp_path):
    from tests.cli import gpudeck
    from tests.test_bench_pane import DIED, saved_run
    from console.store.timeline import timeline_path

    path = saved_run(DIED, "sweep-20261207-190000")
    tl = TimelineWriter(timeline_path(path))
    tl.meta["clock"] = {"host": "gpu-box\x1b[31m", "offset_s": 37.5004, "error_s": 0.0021}
    tl.save()
    out = gpudeck("bench", "show", "sweep-20261207-190000", "-p", "local", timeout=60)
    assert out.returncode == 0, out.stderr
    assert "timeline: gpu-box clock +37.500 s ± 2 ms against this one's" in out.stdout
