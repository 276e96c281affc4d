"""A launch as a Slurm job: sbatch, scontrol, scancel, one log per rank (`console.slurm.launch`).

The Slurm half of `servers.backend.LaunchBackend`. A job's end goes to the launch's state owner
as the same `Ended` evidence a process's does (with Slurm's end state and class beside the exit
status), so the monitor, the verdict and the engine-death reading are the process backend's.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable

if TYPE_CHECKING:
    from ..servers.launching import StopResult
    from ..servers.process_launch import PreflightWarning
    from ..session import HostSession
    from ..store.launches import LaunchRecord


class SlurmBackend:
    name = "slurm"
    how = "submitted with sbatch"
    serves_on_host = False   # on a compute node, reached through the login node
    schedules = True

    async def preflight(self, session: HostSession, port: int | None) -> list[PreflightWarning]:
        return []   # the scheduler places the job on nodes this host (the login node) cannot speak for

    async def submit(self, session: HostSession, config: str, script: str, flags: dict[str, Any] | None,
                     port: int | None) -> LaunchRecord:
        from .launch import submit

        return await submit(session, config, script, flags, port)

    async def evidence(self, monitor: Any) -> None:
        from .launch import monitor_poll

        await monitor_poll(monitor)

    async def stop(self, session: HostSession, record: LaunchRecord, grace_s: float | None,
                   progress: Callable[[str], None] | None) -> StopResult:
        from .launch import stop

        if record.slurm is None:   # a server taken over on the login node (adopted): signals, as a process
            from ..servers.process_launch import stop_process

            return await stop_process(session, record, grace_s, progress)
        return await stop(session, record, grace_s, progress)

    async def reattach(self, session: HostSession) -> list[LaunchRecord]:
        from .launch import reattach

        return await reattach(session)

    def logs(self, record: LaunchRecord, rank: int | None = None) -> str | None:
        from .launch import rank_log

        return record.log if rank is None else rank_log(record, rank)

    def server_node(self, profile: str, port: int | None) -> str | None:
        from .launch import head_for_port

        return head_for_port(profile, port)

    def head_of(self, record: LaunchRecord) -> str | None:
        from .launch import head_of

        return head_of(record)

    def nodes_of(self, record: LaunchRecord) -> list[str]:
        from .launch import nodes_of

        return nodes_of(record)
