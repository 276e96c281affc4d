"""Every profile's `Host` and `HostRuntime`: the header's connection chips, and the long-lived
work of every host (GPU sampling, server monitors, sweeps), on screen or not."""
from __future__ import annotations

import asyncio
import time
from typing import Callable

from profiles.profile import Profile

from ..hosts import Host, HostError, HostStatus, host_for
from ..session import HostSession
from .host_runtime import HostRuntime


class Fleet:
    """One `Host` per profile, shared by every pane that looks at that profile."""

    def __init__(self, profiles: list[Profile], readonly: bool = False):
        self.profiles = {p.name: p for p in profiles}
        self.readonly = readonly
        self.hosts: dict[str, Host] = {p.name: host_for(p) for p in profiles}
        self._sessions: dict[str, HostSession] = {}
        self.runtimes: dict[str, HostRuntime] = {}

    def names(self) -> list[str]:
        return list(self.profiles)

    def session(self, name: str) -> HostSession:
        if name not in self._sessions:
            self._sessions[name] = HostSession(self.profiles[name], self.hosts[name], self.readonly)
        return self._sessions[name]

    def runtime(self, name: str) -> HostRuntime:
        """The one runtime of a profile (made on first use; `start_all` starts them)."""
        if name not in self.runtimes:
            self.runtimes[name] = HostRuntime(self.session(name))
        return self.runtimes[name]

    async def start_all(self) -> None:
        """Every profile's runtime, so crashes are caught on hosts that are not on screen."""
        for name in self.names():
            await self.runtime(name).start()

    def on_status(self, callback: Callable[[str, HostStatus], None]) -> None:
        for name, host in self.hosts.items():
            host.on_status(lambda status, name=name: callback(name, status))

    async def ping(self, name: str, timeout: float = 10.0) -> None:
        """One cheap round trip; the host updates its own status and latency."""
        host = self.hosts[name]
        was_connected = host.status.state == "connected"
        started = time.monotonic()
        try:
            result = await host.run(["true"], timeout=timeout)
            if result.ok and not was_connected:
                # that round trip included (re)connecting: time a second one, so the chip
                # never shows an outage's length as the link's latency
                started = time.monotonic()
                result = await host.run(["true"], timeout=timeout)
        except HostError:
            return  # the host already marked itself down, with the reason
        if result.ok:
            host._set_status("connected", None, (time.monotonic() - started) * 1000)

    async def keep_alive(self, interval: float = 15.0) -> None:
        """Ping every remote host forever; reconnects back off inside the host."""
        while True:
            remote = [n for n, p in self.profiles.items() if not p.is_local]
            await asyncio.gather(*(self.ping(n) for n in remote))
            await asyncio.sleep(interval)

    async def close(self) -> None:
        await asyncio.gather(*(r.close() for r in self.runtimes.values()), return_exceptions=True)
        await asyncio.gather(*(h.close() for h in self.hosts.values()), return_exceptions=True)

    def add(self, profile: Profile) -> None:
        """A profile created while the console runs (the host switcher's add form)."""
        self.profiles[profile.name] = profile
        self.hosts[profile.name] = host_for(profile)
