"""A campaign asks its profile's launch backend (chosen once, `servers.backend.backend_for`) how its
cells run, and never the profile again: lanes of jobs where a scheduler places launches, the power
trace only where the server runs on this host, each lane's nodes and head from the backend."""
from __future__ import annotations

import ast
from pathlib import Path

from profiles import store

from console.campaign import control
from console.campaign.parallel import JobLane, ParallelRunner, runner_for
from console.cli import main
from console.servers.process_backend import ProcessBackend
from console.store import campaigns as st
from console.store import launches
from console.store.launches import LaunchRecord

ROOT = Path(__file__).resolve().parents[1]


class PlacedElsewhere(ProcessBackend):
    """A backend whose scheduler places each launch on a node of its own (a Ray or Kubernetes one)."""

    name = "placed"
    serves_on_host = False
    schedules = True

    def head_of(self, record: LaunchRecord) -> str | None:
        return "10.1.2.3"

    def nodes_of(self, record: LaunchRecord) -> list[str]:
        return ["node-a", "node-b"]


def _campaign(tmp_path) -> st.CampaignState:
    assert main(["profiles", "add", "h1", "--local", "--scripts-dir", str(tmp_path),
                 "--log-dir", str(tmp_path / "logs")]) == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text("[sweep]\nlevels = [1]\nrepeats = 1\n\n[policy]\nparallel = 2\n\n"
                        "[[config]]\nname = \"a\"\n")
    return control.create("h1", campaign)


def test_a_backend_that_schedules_gets_lanes_of_jobs_even_on_a_plain_profile(tmp_path, monkeypatch):
    state = _campaign(tmp_path)
    backend = PlacedElsewhere()
    chosen: list[str] = []

    def backend_for(profile):
        chosen.append(profile.name)
        return backend

    monkeypatch.setattr("console.servers.backend.backend_for", backend_for)
    runner = runner_for(state, store.load("h1"))
    assert isinstance(runner, ParallelRunner) and len(runner.lanes) == 2
    assert all(isinstance(lane, JobLane) and lane.backend is backend for lane in runner.lanes)
    assert chosen == ["h1"]                              # chosen once, handed to every lane
    from console.bench.gpu_watch import for_profile   # the sweep samples no GPU: they are on the job's nodes
    assert for_profile("h1", timeline=None) == (None, None)  # type: ignore[arg-type]
    assert runner.lanes[0]._head_of(st.Cell(name="a", base="a")) is None   # no launch yet: no head
    record = LaunchRecord(id="a-1", config="a", script=None, log=None, exit_file=None, state="ready")
    launches.save("h1", record)
    cell = st.Cell(name="a", base="a", launch_id=record.id)
    assert runner.lanes[0]._head_of(cell) == "10.1.2.3"  # the backend's word, not the record's fields


def test_a_plain_backend_gets_one_cell_at_a_time(tmp_path):
    state = _campaign(tmp_path)
    runner = runner_for(state, store.load("h1"))
    assert not isinstance(runner, ParallelRunner) and isinstance(runner.backend, ProcessBackend)


def test_the_campaign_never_asks_the_profile_whether_it_is_slurm():
    for path in sorted((ROOT / "console" / "campaign").glob("*.py")):
        tree = ast.parse(path.read_text(), str(path))
        asked = [n.lineno for n in ast.walk(tree) if isinstance(n, ast.Attribute) and n.attr == "is_slurm"]
        assert asked == [], f"{path.name}:{asked} asks the profile, not its launch backend"
