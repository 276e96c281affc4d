"""Which launch config owns a GPU process: its process group against gpudeck's records."""
from __future__ import annotations

from ..hosts import HostError
from ..session import HostSession
from ..store import launches
from .procs import processes


async def owners(session: HostSession) -> dict[int, str]:
    """pid -> config name, for every process in the group of a live launch record."""
    groups = {r.pgid: r.config for r in launches.load_all(session.name) if r.live and r.pgid and r.pgid > 1}
    if not groups:
        return {}
    try:
        listing = await processes(session.host)
    except HostError:
        return {}
    return {p.pid: groups[p.pgid] for p in listing if p.pgid in groups}
