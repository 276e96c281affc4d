"""The sweep's one GPU sampler: each sample feeds both the energy trace and the run's timeline.

A sweep samples the GPUs of its server's host once, in the load generator's
own process, on the run's clock: the same snapshot is added to the power
trace that a level's tokens per joule are integrated from (console.bench.energy)
and to the timeline's `gpu` series (util, memory, power, SM clock, throttle
reasons of the GPUs the server holds). No second sampler watches the same
sweep. The stream's generator is closed explicitly when the sweep ends, so
its `nvidia-smi -lms` child ends then, not whenever the generator is collected.

Samples are stamped on this process's clock as they arrive. When they come
over SSH, the host's clock offset against this one is measured first
(console.hosts.clock_offset) and kept in the timeline's `meta.clock`, so a
time the host itself wrote (a log line's stamp) can be set against the run's
clock, or left out where the offset is unknown.
"""
from __future__ import annotations

import asyncio
import contextlib
from typing import Any

from console.store.timeline import TimelineWriter

from .energy import PowerTrace, level_energy

CANCEL_TRIES = 10       # the watch's task is cancelled again until it ends, at most this often ...
CANCEL_WAIT_S = 1.0     # ... waiting this long after each
SAMPLE_S = 0.5          # two samples in a level of a second or more (energy), and a GPU point every half second


def _num(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def gpu_rows(tl: TimelineWriter, t: float, snapshot: Any, held: set[Any]) -> None:
    """The timeline's points for one snapshot: one row per GPU the server holds (memory above the idle mark
    now, or at any earlier sample of the run, so a GPU that drops its memory at a crash keeps its line)."""
    if getattr(snapshot, "state", None) != "ok" or getattr(snapshot, "sample_stale", False):
        return
    rows = [(g.index, _num(g.util_gpu_pct), _num(g.memory_used_mib), _num(g.power_draw_w), _num(g.power_limit_w),
             _num(g.sm_clock_mhz), _num(g.sm_clock_max_mhz),
             ",".join(g.throttle_reasons) if g.throttle_reasons else None)
            for g in snapshot.gpus if g.index in held]
    tl.add_group("gpu", t, rows)   # a sample's GPUs thinned together: its summed power stays whole


class GpuWatch:
    """Samples a host's GPUs through one sweep. `start()` begins, `close()` ends it (the stream with it)."""

    def __init__(self, sampler: Any, timeline: TimelineWriter, idle_mib: float = 1024.0, simulated: bool = False,
                 clock_command: tuple[str, ...] | None = None):
        self.sampler = sampler
        self.clock_command = clock_command   # the host's `date +%s.%N` (a stand-in in tests)
        self.timeline = timeline
        self.trace = PowerTrace(idle_mib=idle_mib)
        self.simulated = simulated
        self.held: set[Any] = set()
        self.samples = 0
        self._task: asyncio.Task | None = None
        self._ending = False

    def start(self) -> None:
        self._task = asyncio.create_task(self.run())

    async def run(self) -> None:
        from console.hosts import LocalHost

        if not isinstance(self.sampler.host, LocalHost):
            from console.hosts.clock_offset import DATE, measure

            offset = await measure(self.sampler.host, self.clock_command or DATE)
            self.timeline.meta["clock"] = offset.to_json()
        async with contextlib.aclosing(self.sampler.snapshots()) as snapshots:
            try:
                async for snap in snapshots:
                    self.add(snap)
                    await asyncio.sleep(0)
            finally:
                self._ending = True   # the stream is being closed now: a second cancel would cut that short

    def add(self, snap: Any) -> None:
        """One snapshot, at the run clock's now: to the power trace and to the timeline."""
        t = self.timeline.now()
        self.samples += 1
        self.trace.add(t, snap)
        if getattr(snap, "state", None) == "ok":
            self.held |= {g.index for g in snap.gpus if (_num(g.memory_used_mib) or 0.0) > self.trace.idle_mib}
        gpu_rows(self.timeline, t, snap, self.held)

    def level_energy(self, duration_s: Any, output_tokens: Any) -> dict:
        """The level that just ended (its last `duration_s` seconds): tokens per joule and average power."""
        end = self.timeline.now()
        if not isinstance(duration_s, (int, float)) or isinstance(duration_s, bool) or duration_s <= 0:
            return level_energy(None, end, end, None, self.simulated) | {"why": "no level duration"}
        return level_energy(self.trace, end - duration_s, end, output_tokens, self.simulated)

    async def close(self) -> None:
        """Stop sampling; the generator is closed inside the task, so its stream child has ended on return."""
        task, self._task = self._task, None
        if task is None:
            return
        for _ in range(CANCEL_TRIES):   # a cancel swallowed on the way (wait_for on 3.11 does) is sent again
            if not self._ending:
                task.cancel()
            await asyncio.wait({task}, timeout=CANCEL_WAIT_S)
            if task.done():
                break
        if task.done() and not task.cancelled():
            task.exception()   # retrieved: a sampler's own error ends only its samples


def for_profile(profile_name: str, timeline: TimelineWriter, host: Any = None, idle_mib: float = 1024.0):
    """The watch for a sweep on a profile's server, and the host it opened (to close after), or (None, None)
    where this process can't sample the server's GPUs: a Slurm job's are on its nodes, not the profile's host.

    `host` is the sweep's own connection to the profile's host (its tunnel's), reused when given."""
    from profiles import store
    from profiles.profile import ProfileError

    from console.gpus.sampler import Sampler
    from console.hosts import LocalHost, host_for

    try:
        profile = store.load(profile_name) if profile_name != "local" or store.exists(profile_name) else None
    except (ProfileError, ValueError, OSError):
        return None, None
    if profile is not None:
        from console.servers.backend import backend_for

        if not backend_for(profile).serves_on_host:   # a Slurm job's server and GPUs are on its nodes
            return None, None
    owned = None
    if host is None:
        host = owned = host_for(profile, measure_latency=False) if profile is not None else LocalHost()
    smi = (profile.gpu.smi_command or None) if profile is not None else None
    simulated = bool(profile is not None and profile.ui.simulated)
    sampler = Sampler(host, SAMPLE_S, smi_command=smi, simulated=simulated)
    return GpuWatch(sampler, timeline, idle_mib, simulated), owned
