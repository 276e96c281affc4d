"""Follow a new launch until it is ready, crashed or stopped, or a time limit passes, and say how it went.

`gpudeck server launch --wait` waits here (the console's runtime watches its
launches for as long as it runs instead), through a ServerMonitor: the one monitor loop for every
backend (a process, a Slurm job), which writes the crash record when it dies.
"""
from __future__ import annotations

import asyncio
from typing import Any

from ..wait_at_most import wait_at_most
from ..session import HostSession
from ..store.launches import LaunchRecord
from .launching import where

SETTLED = ("ready", "crashed", "stopped")


async def until_settled(session: HostSession, record: LaunchRecord,
                        timeout_s: float) -> tuple[object, dict[str, Any] | None]:
    """The record once it settled (or at the time limit), and the crash record written meanwhile.
    The monitor looks through the profile's backend: a process's group, or a job's scheduler state."""
    from .monitor import ServerMonitor

    done = asyncio.Event()
    crash: dict[str, Any] = {}

    def on_state(rec: LaunchRecord) -> None:
        if rec.state in SETTLED:
            done.set()

    monitor = ServerMonitor(session, record, on_state=on_state, on_crash=crash.update, poll_s=0.5)
    task = asyncio.create_task(monitor.run())
    try:
        await wait_at_most(done.wait(), timeout_s)
    finally:
        if record.state == "crashed":
            await asyncio.wait_for(task, 30)   # its crash record is being written
        else:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
    return record, crash or None


def settled_line(record: LaunchRecord, timeout_s: float, crash: dict[str, Any] | None = None) -> str:
    """How the wait ended, in one line."""
    s = record.slurm
    if record.state == "ready":
        nodes = f" on {','.join(s.nodes)} ({len(s.ranks) or 1} rank(s))" if s is not None else ""
        return f"● ready in {record.time_to_ready_s}s{nodes}"
    if record.state == "crashed":
        if crash:
            return f"✖ crashed: {crash.get('class')} at line {crash.get('line')}: {crash.get('summary')}"
        return f"✖ crashed ({where(record)}): {record.crash_class}"
    slurm = f", Slurm {s.state}" if s is not None else ""
    if record.state == "stopped":
        exit_text = "" if record.exit_status is None else f", exit {record.exit_status}"
        return f"stopped before it was ready ({where(record)}{exit_text}{slurm})"
    return f"not ready after {timeout_s:g}s (still {record.state}{slurm})"
