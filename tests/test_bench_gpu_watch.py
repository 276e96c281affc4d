"""The sweep's one GPU sampler: the same samples feed the energy trace and the timeline's gpu series, and its
nvidia-smi stream child is gone as soon as the watch is closed, even when the close lands between samples."""
from __future__ import annotations

import asyncio
from pathlib import Path

from console.bench.gpu_watch import GpuWatch
from console.gpus.sampler import Sampler
from console.hosts import LocalHost
from console.store.timeline import TimelineWriter
from tests.gpus_standin import standin_command


def _ended(pid: int) -> bool:
    """The process is gone or has exited (a zombie awaiting its reaper has ended too)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] in ("Z", "X")


class _CountingWatch(GpuWatch):
    """Sets `seen` once `n` samples were taken, from inside the watch's own loop."""

    def __init__(self, *args, n: int, **kwargs):
        super().__init__(*args, **kwargs)
        self.n, self.seen = n, asyncio.Event()

    def add(self, snap) -> None:
        super().add(snap)
        if self.samples >= self.n:
            self.seen.set()


def _watch(tmp_path: Path, n: int) -> tuple[_CountingWatch, Path]:
    pidfile = tmp_path / "smi.pid"
    sampler = Sampler(LocalHost(), 0.05, smi_command=standin_command("ticks-busy-8x.csv", None, "--pidfile",
                                                                     str(pidfile)))
    return _CountingWatch(sampler, TimelineWriter(None), idle_mib=1024.0, n=n), pidfile


async def test_closing_the_watch_between_samples_ends_its_nvidia_smi_stream(tmp_path):
    watch, pidfile = _watch(tmp_path, n=1)
    watch.start()
    async with asyncio.timeout(30):   # no task of its own: this wakes before the watch's loop moves on
        await watch.seen.wait()
    # the watch's task is now between samples (in its loop body, not inside the sampler's generator):
    # a cancel there left the generator suspended and its stream child running until garbage collection
    pid = int(pidfile.read_text())
    assert not _ended(pid)
    await watch.close()
    assert _ended(pid), f"the nvidia-smi stream (pid {pid}) outlived the sweep's GPU watch"


async def test_one_stream_feeds_the_energy_trace_and_the_timeline_alike(tmp_path):
    watch, _pidfile = _watch(tmp_path, n=6)
    watch.start()
    try:
        await asyncio.wait_for(watch.seen.wait(), 30)
    finally:
        await watch.close()
    tl = watch.timeline
    rows = [dict(zip(("t", "index", "util", "mem", "power", "limit", "sm", "sm_max", "throttle"), p))
            for p in tl.series["gpu"].points]
    times = sorted({r["t"] for r in rows})
    # every sample reached both: one trace point per sample, eight held GPUs per sample on the timeline
    assert len(watch.trace.points) == watch.samples >= 6
    assert times == [t for t, _w in watch.trace.points]
    assert len(rows) == 8 * len(times) and {r["index"] for r in rows} == set(range(8))
    first = [r for r in rows if r["t"] == times[0]]
    assert sum(r["power"] for r in first) == watch.trace.points[0][1]    # the trace sums the same readings
    assert all(r["limit"] == 600.0 and r["sm_max"] == 2430.0 and 0 <= r["util"] <= 100 for r in rows)
    energy = watch.level_energy(times[-1] - times[0], output_tokens=1000)
    assert energy["source"] == "measured" and energy["gpus"] == 8 and energy["avg_power_w"] > 8 * 34


def test_a_sweep_samples_its_profiles_gpus_with_its_stand_in_but_none_of_a_slurm_jobs():
    from console.bench.gpu_watch import for_profile
    from profiles import store
    from profiles.profile import profile_from_dict

    smi = standin_command("ticks-busy-8x.csv", None)
    store.save(profile_from_dict("box", {"transport": "local", "gpu": {"smi_command": smi},
                                         "ui": {"simulated": True}}))
    store.save(profile_from_dict("cluster", {"transport": "local", "slurm": {"enabled": True, "partition": "gpu"}}))
    watch, owned = for_profile("box", TimelineWriter(None), idle_mib=2048.0)
    assert watch is not None and watch.sampler.smi == smi and watch.simulated and watch.trace.idle_mib == 2048.0
    assert isinstance(owned, LocalHost)
    # a job's GPUs are on its nodes, not the profile's host: sampling the host would count the wrong GPUs
    assert for_profile("cluster", TimelineWriter(None)) == (None, None)


async def test_a_cancel_swallowed_inside_the_sampler_does_not_keep_the_watch_running():
    from console.gpus.model import Snapshot

    class Swallowing:
        """A sampler whose wait drops the first cancel, as asyncio.wait_for on Python 3.11 does when its
        answer lands together with the cancel."""
        host = LocalHost()
        swallowed = 0
        waiting = asyncio.Event()     # set while it waits for its next sample, after the first three

        async def snapshots(self):
            n = 0
            while True:
                n += 1
                try:
                    if n > 3:
                        self.waiting.set()
                    await asyncio.sleep(0.01 if n <= 3 else 30.0)
                except asyncio.CancelledError:
                    if self.swallowed:
                        raise
                    self.swallowed += 1
                yield Snapshot(state="ok", gpus=[])

    sampler = Swallowing()
    watch = _CountingWatch(sampler, TimelineWriter(None), n=3)
    watch.start()
    async with asyncio.timeout(60):     # a guard only: without the second cancel, close() never returns
        await sampler.waiting.wait()     # the cancel lands inside the sampler's wait, which drops it
        await watch.close()
    assert sampler.swallowed == 1 and watch._task is None
