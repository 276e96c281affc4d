"""The highest load under an SLO: bracket, bisect, the boundary measured again, and the answer a load."""
from __future__ import annotations

import asyncio

import pytest

from console.campaign import slo_search
from console.campaign.compare import compare, table_lines
from console.campaign.spec import CampaignError, from_dict
from console.store import campaigns as st
from tests.test_campaign_stats import _campaign


def _server(slots: int, step_ms: float = 20.0, flaky_at: int | None = None):
    """A model server: TTFT grows once streams queue behind `slots`; returns a probe and the levels it saw."""
    seen: list[int] = []

    async def probe(c: int) -> dict:
        seen.append(c)
        waves = -(-c // slots)
        ttft = 50.0 + (waves - 1) * 16 * step_ms * 1.2
        if flaky_at == c and seen.count(c) == 2:   # the boundary fails on its second measurement
            ttft = 10_000.0
        return {"concurrency": c, "status": "ok", "completed": 8, "failed": 0, "ttft_p99": ttft,
                "tpot_p99": step_ms * (1 + c / 64), "itl_p99": step_ms * 1.5, "good_requests": 8}
    return probe, seen


def _search(slo: dict, probe):
    return asyncio.run(slo_search.search(probe, slo_search.parse(slo)))


def test_bracket_then_bisect_finds_the_last_level_within_the_slo():
    probe, seen = _server(slots=5)
    found = _search({"ttft_p99_ms": 300, "max_concurrency": 64}, probe)
    assert found.max_ok == 5 and found.first_fail == 6 and not found.capped
    assert seen[:4] == [1, 2, 4, 8]                # doubling until the SLO broke
    assert set(seen[4:]) <= {5, 6} and seen.count(5) == 2   # bisected, then the boundary measured again
    assert next(p for p in found.probes if not p["holds"])["why"].startswith("TTFT p99 ")


def test_a_boundary_that_fails_when_measured_again_moves_down():
    probe, _seen = _server(slots=5, flaky_at=5)
    found = _search({"ttft_p99_ms": 300}, probe)
    assert found.max_ok == 4 and found.first_fail == 5


def test_a_config_holding_up_to_the_cap_says_so():
    probe, _seen = _server(slots=100)
    found = _search({"ttft_p99_ms": 300, "max_concurrency": 16}, probe)
    assert found.max_ok == 16 and found.first_fail is None and found.capped


def test_goodput_needs_the_share_of_requests_within_every_limit():
    async def probe(c):
        return {"concurrency": c, "status": "ok", "completed": 10, "failed": 0, "good_requests": 10 - c}
    found = _search({"goodput": 0.75, "ttft_ms": 500, "max_concurrency": 8}, probe)
    assert found.max_ok == 2 and found.first_fail == 3


@pytest.mark.parametrize("slo, why", [({"ttft_p99": 5}, "unknown key"), ({"goodput": 0.9}, "needs a per-request"),
                                      ({"tpot_p99_ms": -1}, "a positive number"), ({}, "a table of limits")])
def test_a_bad_slo_table_names_the_key(slo, why):
    with pytest.raises(CampaignError, match=why):
        from_dict({"sweep": {"levels": [1]}, "config": [{"name": "a"}], "slo": slo})


def test_the_answer_of_a_campaign_with_an_slo_is_the_config_serving_the_most_users():
    def cell(name, searches):
        return st.Cell(name=name, base=name, status="done",
                       rounds=[{"levels": [], "slo_search": st._slo_search(s)} for s in searches])
    state = _campaign(cell("np1", [{"max_ok": 2, "first_fail": 3}, {"max_ok": 1, "first_fail": 2}]),
                      cell("np4", [{"max_ok": 4, "first_fail": None, "capped": True}] * 2))
    state.spec["slo"] = {"ttft_p99_ms": 400, "max_concurrency": 4}
    comp = compare(state)
    assert comp.slo_answer["config"] == "np4" and comp.slo_answer["clear"]
    line = "".join(comp.verdict())
    assert line.startswith("most users within the SLO: np4 holds TTFT p99 ≤ 400 ms up to 4 streams")
    assert "next np1 up to 1" in line
    np1 = next(r for r in comp.results if r.cell == "np1")
    assert np1.max_load["max_concurrency"] == 1 and np1.max_load["interval"] == [1, 2]
    assert any("np1" in s and "held at c=1" in s and "failed at c=2" in s for s in table_lines(state))
    assert comp.to_json()["slo_answer"]["max_load"]["max_concurrency"] == 4


def test_without_a_search_the_swept_levels_still_give_each_config_its_highest_load_within_the_slo():
    from tests.test_campaign_stats import _cell

    # levels 1 and 4; TTFT p99 90 ms everywhere: a 100 ms SLO holds at both, a 50 ms one at neither
    held = compare(_campaign(_cell("a", 20.0, 1), slo={"ttft_ms": 100}))
    assert held.results[0].max_load["max_concurrency"] == 4 and held.results[0].max_load["capped"]
    assert held.slo_answer is None      # the answer stays the throughput comparison
    lines = table_lines(_campaign(_cell("a", 20.0, 1), slo={"ttft_ms": 100}))
    assert any("(from the swept levels)" in line for line in lines)
    assert any("held at c=4 (the highest level swept)" in line for line in lines)
    failed = compare(_campaign(_cell("a", 20.0, 1), slo={"ttft_ms": 50})).results[0].max_load
    assert failed["max_concurrency"] is None and failed["first_fail"] == 1
