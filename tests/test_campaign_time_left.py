"""A campaign's time left (`console.campaign.time_left`), as its owner reads it: from the visits it
has measured, every repeat still owed counted, with a range. The walk saw `~1m58s left` at 8 min
and `~0s left` with 3 of 15 runs to go: the old estimate counted cells, not visits. How close the
estimate comes on the real demo campaign depends on the machine's load, so it is measured by
tests/bench/campaign_eta.py, not asserted here."""
from __future__ import annotations

import pytest

from console.campaign import owner
from console.campaign.spec import from_dict
from console.campaign.time_left import estimate
from console.store import campaigns as st


def _campaign(cells: int, repeats: int) -> st.CampaignState:
    spec = from_dict({"sweep": {"levels": [1], "repeats": repeats},
                      "config": [{"name": f"c{i}"} for i in range(cells)]})
    return st.CampaignState(id="campaign-t", profile="box", spec=spec.to_json(),
                            cells=[st.Cell(name=f"c{i}", base=f"c{i}") for i in range(cells)], created_at=0.0)


def _visit(cell: st.Cell, start: float, took: float, repeats: int) -> float:
    cell.rounds.append({"levels": [], "started_at": start, "ended_at": start + took})
    cell.started_at, cell.ended_at = start, start + took
    cell.status = "done" if len(cell.rounds) >= repeats else "queued"
    return start + took + 1.0       # the next visit launches a second later


def test_three_runs_to_go_are_three_visits_left_not_zero():
    """5 cells x 3 repeats, 60 s a visit, 12 visits done in interleaved rounds: 3 visits of about
    61 s are left, and the cells that still owe them are each named by their own visits."""
    state = _campaign(5, 3)
    t = 0.0
    for rnd in range(3):
        for cell in state.cells:
            if rnd == 2 and cell.name in ("c2", "c3", "c4"):
                continue
            t = _visit(cell, t, 60.0, 3)
    left = estimate(state, now=t, repeats=3)
    assert left is not None and left.visits_left == 3 and left.measured == 12
    assert left.seconds == pytest.approx(3 * 61.0)
    assert left.low <= left.seconds <= left.high


def test_a_cell_is_expected_to_take_as_long_as_its_own_visits():
    """A slow config's repeats count at its own pace; an unvisited one at the mean so far; the visit
    in progress owes what its expected length has not used yet; two lanes share the work."""
    state = _campaign(3, 2)
    a, b, c = state.cells
    t = _visit(a, 0.0, 100.0, 2)
    t = _visit(b, t, 20.0, 2)
    c.status, c.started_at = "sweeping", t
    left = estimate(state, now=t + 30.0, repeats=2)
    gap = 1.0
    # a: one more of 100 s; b: one more of 20 s; c: two of 60 s (the mean), 30 s of the first used
    assert left is not None and left.visits_left == 4
    assert left.seconds == pytest.approx((100 + gap) + (20 + gap) + 2 * (60 + gap) - 30)
    two = estimate(state, now=t + 30.0, repeats=2, lanes=2)
    assert two is not None and two.seconds == pytest.approx(((100 + 20 + 2 * 60) - 30) / 2)


def test_no_visit_measured_is_unknown_and_an_ended_campaign_has_none():
    state = _campaign(2, 2)
    assert estimate(state, now=10.0, repeats=2) is None
    seen = owner.read(state, now=10.0, alive=True)
    assert seen.time_left is None and seen.left_text() == "time left unknown until a visit ends"
    _visit(state.cells[0], 0.0, 5.0, 2)
    assert owner.read(state, now=10.0, alive=True).time_left is not None
    state.status, state.finished_at = "finished", 10.0
    assert owner.read(state, now=10.0, alive=False).time_left is None
