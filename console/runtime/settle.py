"""Finished launches get their crash record whoever sees them first: a console or any CLI call.

The detached wrapper writes the exit status; this turns a launch that ended
badly and has no crash record yet into one (triaging its log), exactly once
across processes (console.store.crashes writes with an exclusive link).
"""
from __future__ import annotations

import asyncio
from typing import Callable

from ..hosts import HostError
from ..servers import lifecycle, records
from ..servers.monitor import ServerMonitor
from ..session import HostSession
from ..store.crashes import CrashRecord, crash_of_launch


async def settle_launches(session: HostSession, sweep: Callable[[], str | None] | None = None,
                          live: list | None = None) -> list[CrashRecord]:
    """Refresh every live launch record; write the crash record of each that crashed without one.

    Returns the crash records this call wrote or found for launches that had none.
    `live`, when given, receives the records that are still running.
    """
    written: list[CrashRecord] = []
    for record in await lifecycle.reattach(session):
        if record.live and live is not None:
            live.append(record)
    for record in records.load_all(session.name):
        if record.state != "crashed" or record.crash_record:
            continue
        existing = await asyncio.to_thread(crash_of_launch, session.name, record.id)
        if existing is not None:  # another process wrote it and had not yet linked the launch
            record.crash_record = existing.id
            records.save(session.name, record)
            written.append(existing)
            continue
        monitor = ServerMonitor(session, record, sweep=sweep or (lambda: None))
        try:
            await monitor.run()  # not live: triages the log and writes the record once
        except HostError:
            continue
        if monitor.crash_doc is not None:
            written.append(CrashRecord.from_doc(monitor.crash_doc, monitor.crash_doc["id"]))
    return written


def has_live_launches(profile: str) -> bool:
    """Whether a call to the host is worth making (no launch record is live: nothing to settle)."""
    return any(r.live or (r.state == "crashed" and not r.crash_record) for r in records.load_all(profile))
