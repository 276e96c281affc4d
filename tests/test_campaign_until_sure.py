"""Repeat until sure: a cell with a small spread stops as soon as its interval is narrow enough, a noisy one
goes on to its budget, and each says which ended it."""
from __future__ import annotations

import asyncio
import random
from types import SimpleNamespace

import pytest

from console.campaign.compare import compare, table_lines
from console.campaign.runner import CampaignRunner
from console.campaign.spec import CampaignError, from_dict
from console.store import campaigns as st


def _spec(policy: dict, repeats: int = 2) -> dict:
    return {"sweep": {"levels": [4], "repeats": repeats}, "config": [{"name": "steady"}, {"name": "noisy"}],
            "policy": policy}


class _FakeRunner(CampaignRunner):
    """The campaign loop with each visit measured by a random draw instead of a server."""

    def __init__(self, state: st.CampaignState, spreads: dict[str, float]):   # no host: nothing is launched
        self.state, self.spec = state, from_dict(state.spec)
        self.profile = SimpleNamespace(name="nowhere")
        self.say, self.stop_requested = (lambda text: None), asyncio.Event()
        self.rng, self.spreads, self.visits = random.Random(5), spreads, []
        self._searched = None

    def _save(self) -> None:
        pass

    async def _run_cell(self, cell: st.Cell) -> None:
        self.visits.append(cell.name)
        tps = 100 * (1 + self.rng.gauss(0, self.spreads[cell.name]))
        cell.levels = [{"concurrency": 4, "status": "ok", "completed": 8, "failed": 0, "output_throughput": tps,
                        "ttft_p50": 10.0, "ttft_p99": 20.0, "tpot_p50": 5.0, "tpot_p99": 6.0}]
        cell.started_at = 1.0
        self._end_visit(cell, {}, 1.0)


def _run(policy: dict, spreads: dict[str, float], repeats: int = 2):
    spec = _spec(policy, repeats)
    state = st.CampaignState(id="c1", profile="nowhere", spec=spec,
                             cells=[st.Cell(name=n, base=n) for n in spreads], status="running")
    runner = _FakeRunner(state, spreads)
    asyncio.run(runner._visit_all())
    return state, runner


def test_a_steady_cell_stops_when_sure_and_a_noisy_one_at_its_budget():
    state, runner = _run({"precision": 0.05, "max_repeats": 8}, {"steady": 0.001, "noisy": 0.3})
    steady, noisy = state.cell("steady"), state.cell("noisy")
    assert steady.status == noisy.status == "done"
    assert len(steady.rounds) == 2 and steady.rounds[-1]["ended_by"] == "precision"
    assert "sure after 2 repeats" in steady.rounds[-1]["ended_why"]
    assert len(noisy.rounds) == 8 and noisy.rounds[-1]["ended_by"] == "max_repeats"
    assert "max_repeats (8) spent" in noisy.rounds[-1]["ended_why"]
    assert runner.visits.count("steady") == 2 and runner.visits.count("noisy") == 8
    lines = table_lines(state)
    assert any("sure after 2 repeats" in line for line in lines)
    assert compare(state).to_json()["results"][1]["ended_by"] == "max_repeats"


def test_without_precision_the_repeats_are_the_count():
    state, runner = _run({}, {"steady": 0.001, "noisy": 0.3}, repeats=3)
    assert [len(c.rounds) for c in state.cells] == [3, 3] and len(runner.visits) == 6
    assert state.cell("noisy").rounds[-1]["ended_by"] == "repeats"


def test_the_saved_state_keeps_what_ended_the_repeats(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path))
    state, _runner = _run({"precision": 0.05, "max_repeats": 3}, {"steady": 0.001, "noisy": 0.3})
    doc = state.to_json()
    back = st.CampaignState.from_json(doc) if hasattr(st.CampaignState, "from_json") else None
    cleaned = [st._round(r, "r") for r in doc["cells"][1]["rounds"]]
    assert cleaned[-1]["ended_by"] == "max_repeats" and "spent" in cleaned[-1]["ended_why"]
    assert back is None or back.cells[1].rounds[-1]["ended_by"] == "max_repeats"


@pytest.mark.parametrize("policy, why", [({"precision": 1.5}, "a fraction between 0 and 1"),
                                         ({"max_repeats": 5}, "set together with policy.precision"),
                                         ({"precision": 0.05, "max_repeats": 1}, "at least sweep.repeats")])
def test_a_bad_precision_or_budget_names_the_key(policy, why):
    with pytest.raises(CampaignError, match=why):
        from_dict(_spec(policy))
