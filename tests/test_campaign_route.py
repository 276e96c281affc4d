"""A campaign's sweep reaches its server the way `gpudeck bench` and the Bench tab do
(`console.bench.route`): a tunnel from an SSH host's loopback, none locally, and on a Slurm
profile the job's head node, through the login node or directly when the login node is here."""
from __future__ import annotations

import asyncio
from types import SimpleNamespace

import pytest

from console.bench.route import route
from console.campaign.parallel import JobLane
from console.campaign.runner import CampaignRunner
from console.campaign.spec import from_dict
from console.servers.backend import backend_for
from console.store import campaigns as st
from console.store import launches

PROFILE = "box"


class FakeHost:
    """A host that records the forwards asked of it; `tunnelled` as an SSH host is."""

    def __init__(self, tunnelled: bool):
        self.tunnelled = tunnelled
        self.forwards: list[tuple[int, str]] = []

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        self.forwards.append((remote_port, remote_host))
        return 40123 if self.tunnelled else remote_port


class FakeSweep:
    """Stands in for the load generator's process: keeps its argv, measures nothing."""

    started: list[list[str]] = []

    def __init__(self, argv: list[str]):
        FakeSweep.started.append(argv)

    async def start(self) -> None:
        pass

    async def events(self):
        return
        yield

    async def finish(self):
        return 0, ""

    async def close(self) -> None:
        pass

    def stop(self) -> None:
        pass


def _runner(cls, host: FakeHost, is_slurm: bool) -> CampaignRunner:
    """A runner over a fake host: only what a cell's sweep reads is set."""
    runner = cls.__new__(cls)
    runner.spec = from_dict({"sweep": {"levels": [1], "num_prompts": 1}, "config": [{"name": "a"}]})
    runner.profile = SimpleNamespace(name=PROFILE, is_slurm=is_slurm, server=SimpleNamespace(url=None),
                                     gpu=SimpleNamespace(smi_command=[]), ui=SimpleNamespace(simulated=False))
    runner.session = SimpleNamespace(host=host)
    runner.backend = backend_for(runner.profile)
    runner.stop_requested = asyncio.Event()
    runner.state = None
    runner._sweep, runner._label, runner._saved_live = None, None, 0.0
    runner._save = lambda: None
    runner.say = lambda text: None
    return runner


def _arg(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def _job(record_id: str, port: int, head: str, job: str) -> launches.LaunchRecord:
    record = launches.LaunchRecord(id=record_id, config="a", script=None, log=None, exit_file=None,
                                   state="ready", port=port,
                                   slurm={"job_id": job, "nodes": [head], "head_addr": head})
    launches.save(PROFILE, record)
    return record


@pytest.fixture(autouse=True)
def fake_sweeps(monkeypatch):
    import console.bench.process as process

    FakeSweep.started = []
    monkeypatch.setattr(process, "SweepProcess", FakeSweep)
    return FakeSweep.started


async def _sweep(runner: CampaignRunner, cell: st.Cell, port: int) -> list[str]:
    await runner._sweep_cell(cell, port)
    assert len(FakeSweep.started) == 1
    return FakeSweep.started[0]


def test_an_ssh_cell_sweeps_through_a_tunnel_naming_the_server():
    host = FakeHost(tunnelled=True)
    argv = asyncio.run(_sweep(_runner(CampaignRunner, host, False), st.Cell(name="a", base="a"), 8000))
    assert host.forwards == [(8000, "127.0.0.1")]
    assert _arg(argv, "--url") == "http://127.0.0.1:40123"
    assert "--tunnelled" in argv and _arg(argv, "--server-port") == "8000"
    assert _arg(argv, "--server-url") == "http://127.0.0.1:8000"


def test_a_local_cell_sweeps_its_server_directly():
    host = FakeHost(tunnelled=False)
    argv = asyncio.run(_sweep(_runner(CampaignRunner, host, False), st.Cell(name="a", base="a"), 8000))
    assert host.forwards == []
    assert _arg(argv, "--url") == "http://127.0.0.1:8000" and "--tunnelled" not in argv


def test_a_slurm_lane_tunnels_through_the_login_node_to_its_own_jobs_head():
    # two lanes' jobs serve the same port on different nodes: the lane's own record decides
    _job("other", 8000, "10.0.0.9", "41")
    mine = _job("mine", 8000, "10.0.0.7", "42")
    host = FakeHost(tunnelled=True)
    cell = st.Cell(name="a", base="a", launch_id=mine.id)
    argv = asyncio.run(_sweep(_runner(JobLane, host, True), cell, 8000))
    assert host.forwards == [(8000, "10.0.0.7")]
    assert _arg(argv, "--url") == "http://127.0.0.1:40123" and "--tunnelled" in argv
    assert _arg(argv, "--server-port") == "8000"


def test_a_slurm_lane_on_the_login_node_itself_connects_to_the_head_directly():
    mine = _job("mine", 8000, "10.0.0.7", "42")
    host = FakeHost(tunnelled=False)
    cell = st.Cell(name="a", base="a", launch_id=mine.id)
    argv = asyncio.run(_sweep(_runner(JobLane, host, True), cell, 8000))
    assert host.forwards == [] and "--tunnelled" not in argv
    assert _arg(argv, "--url") == "http://10.0.0.7:8000"


def test_bench_on_a_local_slurm_profile_targets_the_jobs_head_node():
    """The rule the campaign now shares: `gpudeck bench` on the login node itself reaches the head."""
    _job("mine", 8000, "fe80::7", "42")
    from console.servers.process_backend import ProcessBackend
    from console.slurm.backend import SlurmBackend

    found = asyncio.run(route(FakeHost(tunnelled=False), PROFILE, SlurmBackend(), "http://127.0.0.1:8000/v1"))
    assert found.url == "http://[fe80::7]:8000/v1" and not found.tunnelled
    plain = asyncio.run(route(FakeHost(tunnelled=False), PROFILE, ProcessBackend(), "http://127.0.0.1:8000/v1"))
    assert plain.url == "http://127.0.0.1:8000/v1"
