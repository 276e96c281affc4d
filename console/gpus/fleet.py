"""Sampling several hosts at once, and the one-line summary of each.

Each profile gets its own Sampler (one stream per host); `SamplerGroup.updates()`
yields `(profile name, Snapshot)` as samples arrive from any of them. The
summary is the fleet's one per-host type, `fleet_table.HostRow`, named after
the profile.
"""
from __future__ import annotations

import asyncio
import contextlib
import time
from typing import AsyncIterator, Iterable

from console.hosts import Host, host_for
from profiles.profile import Profile

from .fleet_table import HostRow, host_row
from .model import Snapshot
from .sampler import Sampler


def sampler_for(profile: Profile, host: Host | None = None, interval_s: float | None = None) -> Sampler:
    """A Sampler configured from the profile's [gpu] section."""
    interval = interval_s if interval_s is not None else profile.gpu.sample_interval_ms / 1000
    return Sampler(host or host_for(profile), interval, smi_command=profile.gpu.smi_command or None,
                   simulated=profile.ui.simulated)


def fleet_row(name: str, snap: Snapshot | None, now: float | None = None, link_down: bool = False) -> HostRow:
    """The profile's row: `link_down`: the host's runtime has lost its link (what its chip says);
    its last sample, re-shown marked stale, does not make the host reachable."""
    return host_row(snap, time.time() if now is None else now, name=name, link_down=link_down)


class SamplerGroup:
    """Samplers for many profiles, merged into one stream of updates."""

    def __init__(self, samplers: dict[str, Sampler], own_hosts: bool = True):
        self.samplers = samplers
        self.own_hosts = own_hosts      # False when the hosts are shared with the app: close() leaves them
        self.latest: dict[str, Snapshot] = {}

    @classmethod
    def from_profiles(cls, profiles: Iterable[Profile], interval_s: float | None = None) -> "SamplerGroup":
        return cls({p.name: sampler_for(p, interval_s=interval_s) for p in profiles})

    async def updates(self) -> AsyncIterator[tuple[str, Snapshot]]:
        queue: asyncio.Queue = asyncio.Queue()

        async def pump(name: str, sampler: Sampler) -> None:
            async with contextlib.aclosing(sampler.snapshots()) as snapshots:
                async for snap in snapshots:
                    await queue.put((name, snap))

        tasks = [asyncio.create_task(pump(n, s)) for n, s in self.samplers.items()]
        try:
            while True:
                name, snap = await queue.get()
                self.latest[name] = snap
                yield name, snap
        finally:
            for task in tasks:
                task.cancel()
            for task in tasks:
                with contextlib.suppress(BaseException):
                    await task

    def rows(self, now: float | None = None) -> list[HostRow]:
        return [fleet_row(name, self.latest.get(name), now) for name in self.samplers]

    async def close(self) -> None:
        if not self.own_hosts:
            return
        for sampler in self.samplers.values():
            with contextlib.suppress(Exception):
                await sampler.host.close()
