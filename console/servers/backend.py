"""Where a launch runs, chosen once per profile: a detached process on the host, or a Slurm job.

`backend_for(profile)` is the one place that asks which (as `hosts.host_for` chooses the host);
every caller (lifecycle's launch / stop / reattach, the monitor's look, the bench's route, the
campaign's lanes) goes through the `LaunchBackend` it returns and never asks the profile again.
A backend gathers evidence and hands it to the launch's state owner (`launch_state`); it never
sets a state itself. Another scheduler (Ray, Kubernetes) is one more file implementing this
protocol and one more line in `backend_for`.
"""
from __future__ import annotations

from typing import TYPE_CHECKING, Any, Callable, Protocol

if TYPE_CHECKING:
    from profiles.profile import Profile

    from ..session import HostSession
    from ..store.launches import LaunchRecord
    from .launching import StopResult
    from .process_launch import PreflightWarning


class LaunchBackend(Protocol):
    """What a kind of launch offers: start it, look at it, stop it, find it again, read its logs."""

    name: str
    how: str   # how a launch runs, as the launch confirmation says it
    serves_on_host: bool   # the server listens on the host itself (its /metrics and GPUs there)
    schedules: bool        # a scheduler places each launch on nodes of its own: a campaign's cells run
                           # as lanes of jobs at once (`campaign.parallel`), each on its own head node

    async def preflight(self, session: HostSession, port: int | None) -> list[PreflightWarning]:
        """Warnings before a launch (a port taken, GPUs holding memory)."""
        ...

    async def submit(self, session: HostSession, config: str, script: str, flags: dict[str, Any] | None,
                     port: int | None) -> LaunchRecord:
        """Start the script; the saved record."""
        ...

    async def evidence(self, monitor: Any) -> None:
        """One look for a monitor: gather what the process or the scheduler shows, hand it to the
        state owner, report changes through the monitor's callbacks."""
        ...

    async def stop(self, session: HostSession, record: LaunchRecord, grace_s: float | None,
                   progress: Callable[[str], None] | None) -> StopResult:
        """Stop it (SIGTERM, SIGKILL after the grace) and say how it went."""
        ...

    async def reattach(self, session: HostSession) -> list[LaunchRecord]:
        """Every launch live when last seen, brought up to date."""
        ...

    def logs(self, record: LaunchRecord, rank: int | None = None) -> str | None:
        """The path of the launch's log (of one rank's, where a launch has ranks)."""
        ...

    def server_node(self, profile: str, port: int | None) -> str | None:
        """Where the server serving `port` listens, when not on the host itself (a job's head node)."""
        ...

    def head_of(self, record: LaunchRecord) -> str | None:
        """Where this launch's server listens, when not on the host itself (its job's head node)."""
        ...

    def nodes_of(self, record: LaunchRecord) -> list[str]:
        """The nodes this launch ran on, when a scheduler placed it; none for the host itself."""
        ...


def backend_for(profile: Profile) -> LaunchBackend:
    """The backend of a profile's launches: Slurm jobs on a Slurm profile, else processes."""
    if profile.is_slurm:
        from ..slurm.backend import SlurmBackend

        return SlurmBackend()
    from .process_backend import ProcessBackend

    return ProcessBackend()
