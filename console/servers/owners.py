"""Which launch owns a process, and which one a name means: processes and names against gpudeck's records."""
from __future__ import annotations

import asyncio
from typing import Iterable

from ..hosts import HostError
from ..session import HostSession
from ..store import launches
from ..store.launches import LaunchRecord
from .procs import Proc, processes


def owner_groups(records: Iterable[LaunchRecord]) -> dict[int, str]:
    """pgid -> config, for every live launch record."""
    return {pgid: r.config for pgid, r in live_groups(records).items()}


def live_groups(records: Iterable[LaunchRecord]) -> dict[int, LaunchRecord]:
    """pgid -> its live launch record. Only a group above 1 can be one gpudeck made: a record
    naming group 0 or 1 (the kernel's threads, init's group) would hand processes that are not the
    server's to a config."""
    return {r.pgid: r for r in records
            if r.live and isinstance(r.pgid, int) and not isinstance(r.pgid, bool) and r.pgid > 1}


async def process_launches(session: HostSession, records: Iterable[LaunchRecord] | None = None
                           ) -> dict[int, LaunchRecord]:
    """pid -> the live launch whose process group holds it (for `gpus --json`); empty when there
    is none or the host cannot list its processes."""
    if records is None:
        records = await asyncio.to_thread(launches.load_all, session.name)
    groups = live_groups(records)
    if not groups:
        return {}
    try:
        listing = await processes(session.host)
    except HostError:
        return {}
    return {p.pid: groups[p.pgid] for p in listing if p.pgid in groups}


async def owners(session: HostSession, records: Iterable[LaunchRecord] | None = None, fallback: dict[int, str] | None = None) -> dict[int, str]:
    """pid -> config name, for every process in the group of a live launch record.

    `records`: the launch records already in hand (a host's runtime keeps them), else the store's.
    `fallback`: what to answer when the host cannot list its processes (a runtime keeps its last
    map through a dropped link); empty unless given."""
    if records is None:
        records = await asyncio.to_thread(launches.load_all, session.name)
    groups = owner_groups(records)
    if not groups:
        return {}
    try:
        listing = await processes(session.host)
    except HostError:
        return dict(fallback or {})
    return {p.pid: groups[p.pgid] for p in listing if p.pgid in groups}


async def unmanaged(session: HostSession) -> tuple[list[Proc], list[str]]:
    """Inference servers running now that no live launch record owns (what `adopt` offers), and one
    line per unreadable launch record. A simulated host lists only its own simulators."""
    from .procs import inference_processes

    running = await inference_processes(session.host)
    if session.profile.ui.simulated:
        from ..bench.endpoint import loopback_port
        from ..demo import simulated_process

        port = loopback_port(session.profile.server.url or "")
        running = [p for p in running if simulated_process(p.command, port)]
    found = await asyncio.to_thread(launches.read_launches, session.name)
    managed = {r.pgid for r in found.records if r.live}
    return [p for p in running if p.pgid not in managed], [u.line for u in found.unreadable]


def pick(profile: str, target: str | None, live_only: bool = True) -> LaunchRecord:
    """The launch `target` names (a launch id or a config name; none: the only live one).
    LookupError with one line when it names none, or several while none was named."""
    candidates = launches.load_all(profile)
    if live_only:
        candidates = [r for r in candidates if r.live]
    if target:
        candidates = [r for r in candidates if target in (r.id, r.config)]
    if not candidates:
        raise LookupError(f"no {'running ' if live_only else ''}server{' ' + repr(target) if target else ''} "
                          f"on {profile}")
    if len(candidates) > 1 and not target and live_only:
        raise LookupError("several servers are running; name one: " + ", ".join(r.config for r in candidates))
    return candidates[0]


def escaped_after_stop(profile: str, target: str | None) -> LaunchRecord | None:
    """The stopped launch `target` names whose processes escaped its stop (what `--kill-escaped`
    ends without a second stop), or None."""
    if not target:
        return None
    return next((r for r in launches.load_all(profile) if r.escaped and not r.live and target in (r.id, r.config)),
                None)
