"""Campaign cells in parallel where a scheduler places launches (a Slurm profile): `[policy] parallel = N`
cells at once, each its own job.

Each of the N lanes is a `CampaignRunner` of its own (its own connection to
the login node, its own sweep process) that shares the one campaign state:
a lane takes the next queued cell, submits it as a job, waits for every rank,
sweeps it, cancels the job and takes the next. Slurm places the jobs; a cell
records the node(s) it ran on, so the same config on two nodes reads as a
repeat, not as a second config. Everything runs on one event loop, so the
shared state is written by one writer at a time (and every write is atomic).

A driver killed with `kill -9` leaves cells mid-way; on resume each one's job
is found by the id in its launch record and cancelled, and the cell is redone.

With plain profiles, `campaign run --hosts a,b,c` (`[policy] hosts`) makes one
lane per host instead: each host runs one cell at a time, and the cells'
results merge into the one campaign state, each naming its host.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from profiles.profile import Profile

from ..servers.backend import LaunchBackend
from ..store import launches
from . import lock as locks
from . import owner
from ..store import campaigns as st
from .runner import CampaignRunner, CampaignStopped, ServerStillRunning
from .spec import check_dataset


def runner_for(state: st.CampaignState, profile: Profile, say: Callable[[str], None] | None = None):
    """The runner a campaign needs: one lane per host with --hosts, lanes of jobs where the profile's
    launch backend (chosen once, `backend_for`) has a scheduler place them, else the
    one-cell-at-a-time runner."""
    from ..servers.backend import backend_for
    from .spec import from_dict

    if from_dict(state.spec, str(state.dir / "campaign.toml")).policy.hosts:
        return HostsRunner(state, profile, say)
    backend = backend_for(profile)
    if backend.schedules:
        return ParallelRunner(state, profile, say, backend)
    return CampaignRunner(state, profile, say, backend)


def with_hosts(spec: dict, hosts_text: str, where: str) -> dict:
    """`--hosts a,b,c`: check every profile can run servers; the spec with the list in its policy.
    Nothing is saved: a refused list leaves no campaign behind."""
    from profiles import store
    from profiles.profile import ProfileError

    from .spec import from_dict

    hosts = [h.strip() for h in hosts_text.split(",") if h.strip()]
    if not hosts:
        raise ValueError("--hosts names no profile")
    for name in hosts:
        try:
            profile = store.load(name)
        except (ProfileError, ValueError, OSError) as exc:
            raise ValueError(f"--hosts: {exc}") from None
        if profile.is_prometheus:
            raise ValueError(f"--hosts: profile {name} has no shell to launch servers on")
    if len(set(hosts)) != len(hosts):
        raise ValueError("--hosts names a profile twice; one lane per profile")
    spec = dict(spec)
    spec["policy"] = {**(spec.get("policy") or {}), "hosts": hosts}
    from_dict(spec, where)  # the same checks a file gets
    return spec


class JobLane(CampaignRunner):
    """One lane: one cell at a time, as a job the backend's scheduler places; the server is reached
    on the job's head node."""

    async def _attempt(self, cell: st.Cell) -> None:
        try:
            await super()._attempt(cell)
        finally:
            record = launches.get(self.profile.name, cell.launch_id) if cell.launch_id else None
            nodes = self.backend.nodes_of(record) if record is not None else []
            if nodes:
                cell.node = ",".join(nodes)
                self._save()

    def _head_of(self, cell: st.Cell) -> str | None:
        """This lane's own job's head node: another lane's job may serve the same port elsewhere."""
        record = launches.get(self.profile.name, cell.launch_id) if cell.launch_id else None
        return self.backend.head_of(record) if record is not None else None

    async def _gpus_idle(self, cell: st.Cell) -> None:
        """Slurm takes the GPUs back with the job; a later job waits for them if it must."""


class ParallelRunner(CampaignRunner):
    """Runs the campaign's remaining cells `policy.parallel` at a time, each lane a `JobLane`."""

    def __init__(self, state: st.CampaignState, profile: Profile, say: Callable[[str], None] | None = None,
                 backend: LaunchBackend | None = None):
        super().__init__(state, profile, say, backend)
        self.lanes = self._make_lanes(say)
        self._halted = False   # a lane's server outlived its stop

    def _make_lanes(self, say) -> list[CampaignRunner]:
        return [JobLane(self.state, self.profile, say, self.backend)
                for _ in range(max(1, self.spec.policy.parallel))]

    def _lane_of(self, cell: st.Cell) -> CampaignRunner:
        return self.lanes[0]

    def request_stop(self) -> None:
        super().request_stop()
        for lane in self.lanes:
            lane.request_stop()

    async def run(self) -> st.CampaignState:
        state = self.state
        key = await locks.take(self.profile, state.spec, state.id)
        ended: BaseException | None = None
        try:
            check_dataset(self.spec, str(state.dir / "campaign.toml"))   # no launch for a spoilt prompts file
            owner.begin(state, lanes=len(self.lanes))
            for cell in state.cells:
                if cell.status in st.IN_PROGRESS:
                    await self._lane_of(cell)._recover(cell)
            queue = [c for c in state.cells if c.status not in st.FINISHED]
            self._log(f"{len(queue)} cell(s), {len(self.lanes)} at a time")
            outcomes = await asyncio.gather(*(self._lane(lane, queue) for lane in self.lanes),
                                            return_exceptions=True)
            failure = next((o for o in outcomes if isinstance(o, BaseException)
                            and not isinstance(o, CampaignStopped)), None)
            if failure is not None:
                raise failure
            if self.stop_requested.is_set() or any(isinstance(o, CampaignStopped) for o in outcomes):
                raise CampaignStopped()
        except locks.LockHeld as exc:   # another campaign holds a host: no ending of this one
            ended = exc
            raise
        except BaseException as exc:  # noqa: BLE001 - the owner says how it ended; every finished cell is kept
            ended = exc
            if not isinstance(exc, Exception):
                raise
        finally:
            owner.conclude(state, ended, self._log)
            locks.release(*key, state.id)
            for runner in (self, *self.lanes):
                await runner.session.host.close()
        return state

    async def _lane(self, lane: CampaignRunner, queue: list[st.Cell]) -> None:
        """Take queued cells one after another until none is left, a stop, or an SLO met."""
        while queue and not self.stop_requested.is_set() and not self._halted:
            cell = queue.pop(0)
            if cell.status != "queued" and cell.status not in st.IN_PROGRESS:
                continue  # skipped meanwhile (an SLO met by another lane's cell)
            try:
                await lane._run_cell(cell)
            except ServerStillRunning:
                self._halted = True   # the other lanes launch nothing more either
                raise
            if cell.status == "queued":   # more repeats to come: back of the queue, so rounds interleave
                queue.append(cell)
                continue
            if self.spec.policy.stop_at_first_slo and cell.status == "done" and lane._meets_slo(cell):
                for rest in queue:
                    if rest.status == "queued":
                        rest.status, rest.note = "skipped", f"{cell.name} met every SLO first"
                queue.clear()
                self._save()


class HostLane(CampaignRunner):
    """One host of a `--hosts` campaign: its cells launch, sweep and stop on this profile."""

    async def _attempt(self, cell: st.Cell) -> None:
        cell.node = self.profile.name
        await super()._attempt(cell)


class HostsRunner(ParallelRunner):
    """`--hosts a,b,c`: one lane per profile, each taking the next queued cell when its last one ends."""

    def _make_lanes(self, say) -> list[CampaignRunner]:
        from profiles import store

        return [HostLane(self.state, store.load(name), say) for name in self.spec.policy.hosts]

    def _lane_of(self, cell: st.Cell) -> CampaignRunner:
        """The interrupted cell's own host stops what it left running there."""
        return next((lane for lane in self.lanes if lane.profile.name == cell.node), self.lanes[0])

    async def run(self) -> st.CampaignState:
        from .endpoints import clash

        refused = await clash([lane.profile for lane in self.lanes], self.state.spec)
        if refused:   # checked at start too; a profile edited since must not put two lanes on one server
            for lane in (self, *self.lanes):
                await lane.session.host.close()
            raise locks.LockHeld(refused)
        others = [lane.profile for lane in self.lanes if lane.profile.name != self.state.profile]
        taken: list[tuple[str, int | None]] = []
        try:
            for profile in others:  # no other campaign may drive a host of this one meanwhile
                taken.append(await locks.take(profile, self.state.spec, self.state.id))
            return await super().run()
        finally:
            for key in taken:
                locks.release(*key, self.state.id)
