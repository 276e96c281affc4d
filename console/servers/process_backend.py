"""A launch as a detached process on the host: the wrapper, its process group and its exit file.

The process half of `backend.LaunchBackend`; the work is in `process_launch` (start, probe, stop)
and the monitor's `look_at_process`, which hand what they see to `launch_state`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..session import HostSession
    from ..store.launches import LaunchRecord
    from .launching import StopResult
    from .process_launch import PreflightWarning


class ProcessBackend:
    name = "process"
    how = "run from its folder, detached, output to its log"
    serves_on_host = True
    schedules = False

    async def preflight(self, session: HostSession, port: int | None) -> list[PreflightWarning]:
        from .process_launch import preflight_process

        return await preflight_process(session, port)

    async def submit(self, session: HostSession, config: str, script: str, flags: dict[str, Any] | None,
                     port: int | None) -> LaunchRecord:
        from .process_launch import launch_process

        return await launch_process(session, config, script, flags, port)

    async def evidence(self, monitor: Any) -> None:
        await monitor.look_at_process()

    async def stop(self, session: HostSession, record: LaunchRecord, grace_s: float | None,
                   progress: Callable[[str], None] | None) -> StopResult:
        from .process_launch import stop_process

        return await stop_process(session, record, grace_s, progress)

    async def reattach(self, session: HostSession) -> list[LaunchRecord]:
        from .process_launch import reattach_processes

        return await reattach_processes(session)

    def logs(self, record: LaunchRecord, rank: int | None = None) -> str | None:
        return record.log if rank is None else None   # one process, one log

    def server_node(self, profile: str, port: int | None) -> str | None:
        return None   # the server listens on the host itself

    def head_of(self, record: LaunchRecord) -> str | None:
        return None

    def nodes_of(self, record: LaunchRecord) -> list[str]:
        return []
