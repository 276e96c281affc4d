"""Finished launches get their crash record whoever sees them first: a console or any CLI call.

The detached wrapper writes the exit status; this turns a launch that ended
badly and has no crash record yet into one (triaging its log), exactly once
across processes (console.store.crashes writes with an exclusive link).
"""
from __future__ import annotations

import asyncio
from typing import Callable

from ..hosts import HostError
from ..store import launches
from ..servers.launch_state import CrashFound, move
from ..servers.settle_gate import profile_to_settle
from ..session import HostSession
from ..store.crashes import CrashRecord, crash_of_launch


async def settle_launches(session: HostSession, sweep: Callable[[], str | None] | None = None,
                          live: list | None = None) -> list[CrashRecord]:
    """Refresh every live launch record; write the crash record of each that crashed without one.

    Returns the crash records this call wrote or found for launches that had none.
    `live`, when given, receives the records that are still running.
    """
    from ..servers import lifecycle
    from ..servers.monitor import ServerMonitor

    written: list[CrashRecord] = []
    for record in await lifecycle.reattach(session):
        if record.live and live is not None:
            live.append(record)
    for record in launches.load_all(session.name):
        if record.state != "crashed" or record.crash_record:
            continue
        existing = await asyncio.to_thread(crash_of_launch, session.name, record.id)
        if existing is not None:  # another process wrote it and had not yet linked the launch
            move(session.name, record, CrashFound(existing.cls, existing.id))
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


def settle_before_command(args, timeout_s: float = 10.0) -> None:
    """Before any CLI command about a profile: give finished launches their crash record.

    Costs a few file reads when nothing of the profile is live or unrecorded
    (console/servers/settle_gate.py decides); otherwise one round trip to the
    host. A host that does not answer costs a line on stderr, never the command.
    """
    import sys

    from profiles import store

    name = profile_to_settle(args)
    if name is None:
        return
    try:
        profile = store.load(name)
    except Exception:  # noqa: BLE001 - a bad profile is the command's own error to report
        return

    async def settle() -> list[CrashRecord]:
        session = HostSession.open(profile, measure_latency=False)   # one look, then gone
        try:
            return await asyncio.wait_for(settle_launches(session), timeout_s)
        finally:
            await session.host.close()

    try:
        announce(name, asyncio.run(settle()))
    except (HostError, asyncio.TimeoutError, OSError) as exc:
        sys.stderr.write(f"gpudeck: ⚠ could not check {name}'s servers: {exc or 'no answer'}\n")


def announce(profile: str, found: list[CrashRecord]) -> None:
    """Crashes a CLI call settled: offered on the task board, and one line each on stderr."""
    import sys

    from ..store.suggest import offer_crash

    for crash in found:
        try:
            offer_crash(profile, crash)
        except Exception:  # noqa: BLE001 - a locked or broken board is reported by the tasks command
            pass
        sys.stderr.write(f"gpudeck: ✖ {crash.config} crashed ({crash.cls}); crash record {crash.id}\n")
