"""Launch a config, follow it, stop it: the entry points every caller uses, whatever the backend.

Each call goes to the profile's `LaunchBackend` (`backend.backend_for`: a detached process on the
host, `process_launch`; a Slurm job, `console.slurm.launch`), chosen there once, so no caller asks
which kind of launch it holds. The process backend's helpers are named here too, for the callers
that work on a process launch itself (adopt, survivors after a stop, the wrapper's script).
"""
from __future__ import annotations

from typing import Any, Callable

from ..session import HostSession
from ..store.launches import LaunchRecord
from .backend import backend_for
from .launching import LaunchError as LaunchError, StopResult
from .process_launch import (LAUNCH_GRACE_S as LAUNCH_GRACE_S, SERVER_HALF as SERVER_HALF, WRAPPER as WRAPPER,
                             PreflightWarning as PreflightWarning, ProbeState as ProbeState, adopt as adopt,
                             await_exit_status as await_exit_status, kill_escaped as kill_escaped,
                             launch_lines as launch_lines, launch_process as launch_process,
                             marked_pids as marked_pids, probe as probe, reattach_processes as reattach_processes,
                             settle as settle, signal_group as signal_group, stop_process as stop_process,
                             survivors as survivors)


async def preflight(session: HostSession, port: int | None) -> list[PreflightWarning]:
    """Warn before a launch (its backend says what: the port is taken, GPUs already hold memory)."""
    return await backend_for(session.profile).preflight(session, port)


async def launch(session: HostSession, config: str, script: str, flags: dict[str, Any] | None = None,
                 port: int | None = None) -> LaunchRecord:
    """Start `script` through the profile's backend (a detached process, a Slurm job); the saved record."""
    return await backend_for(session.profile).submit(session, config, script, flags, port)


async def reattach(session: HostSession) -> list[LaunchRecord]:
    """On start (and when the host is back): refresh every record that was live when last seen,
    through the profile's backend."""
    return await backend_for(session.profile).reattach(session)


async def stop(session: HostSession, record: LaunchRecord, grace_s: float | None = None,
               progress: Callable[[str], None] | None = None) -> StopResult:
    """Stop a launch through the profile's backend (signals to a process, scancel to a job)."""
    return await backend_for(session.profile).stop(session, record, grace_s, progress)
