"""Every launch of a profile, brought up to date, for `gpudeck server status`.

The states are current only if the host answered: one round trip a refresh
tells both (the look at every live launch, in one command, is the answer;
with none live, `true`). Then ended launches are
settled first (their crash records written, once, whoever sees them first),
the processes a stop left behind are looked for again, and each ready
server's own `/metrics` is read. An unreachable host gives the last known
states, from the launch records, and says so; a live one shows `unknown`.
"""
from __future__ import annotations

import asyncio
from dataclasses import dataclass, field

from ..hosts import HostError
from ..session import HostSession
from ..store import launches as records
from ..servers import launch_state, unreached


@dataclass
class LaunchStatus:
    reached: bool
    why: str = ""                                        # why the host did not answer
    launches: list = field(default_factory=list)         # LaunchRecord, newest first
    unreadable: list[str] = field(default_factory=list)  # one line per bad launch record
    metrics: dict[str, dict] = field(default_factory=dict)  # launch id -> its /metrics view
    settled: list = field(default_factory=list)          # CrashRecord: crashes this look recorded


async def launch_status(session: HostSession) -> LaunchStatus:
    from ..servers import lifecycle
    from .settle import settle_launches

    from ..servers.backend import backend_for

    live = [r for r in records.load_all(session.name) if r.live]
    if live and not backend_for(session.profile).schedules:
        # the look at every live launch is one command, and it is the answer: no `true` before it
        still: list = []
        settled = await settle_launches(session, live=still)
        notes = [n for n in (unreached.note(r) for r in still) if n is not None]
        reached, why = not notes, notes[0].error if notes else ""
    else:
        try:  # one round trip: the states below are current only if the host answered
            reached, why = (await session.host.run(["true"], timeout=15)).ok, ""
        except HostError as exc:
            reached, why = False, str(exc)
        # a crashed launch gets its record (once, whoever sees it first)
        settled = await settle_launches(session) if reached else []
    found = records.read_launches(session.name)
    launches, unreadable = found.records, [u.line for u in found.unreadable]
    status = LaunchStatus(reached, why, launches, unreadable, settled=settled)
    if not reached:
        from ..slurm import unanswered

        for r in launches:  # their state is unknown now, not the last one written (nothing is saved)
            unreached.mark(r, why or f"{session.name} did not answer")
            unanswered.mark(r, why or f"{session.name} did not answer")  # a Slurm job's login node
        return status
    for r in launches:
        if r.escaped and not r.live:  # still running after its stop? look again
            left, _ = await lifecycle.survivors(session, r)
            if [s.pid for s in left] != r.escaped:
                r.escaped = [s.pid for s in left]
                launch_state.save(session.name, r)
    status.metrics = await _live_metrics(session, launches)
    return status


async def _live_metrics(session: HostSession, launches) -> dict[str, dict]:
    """launch id -> the server's own `/metrics` view, for every ready launch with a port
    (`{"unavailable": why}` when the page cannot be read)."""
    from ..servers import live_metrics

    ready = [r for r in launches if r.state == "ready" and r.port]

    async def one(record):
        found = await live_metrics.fetch(session.host, record.port)
        return record.id, found.to_json() if isinstance(found, live_metrics.LiveMetrics) else {"unavailable": found}

    return dict(await asyncio.gather(*(one(r) for r in ready)))
