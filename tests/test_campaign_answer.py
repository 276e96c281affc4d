"""A campaign's answer is one plain call a worker thread can make: the same comparison, grid rows,
verdict and frontier the tab drew from its separate calls on the UI thread."""
from __future__ import annotations

import asyncio

from console.campaign.answer import answer
from console.campaign.compare import compare, slo_lines
from console.campaign.pareto import frontier
from console.store import campaigns as st


def _campaign() -> st.CampaignState:
    def level(concurrency: int, tps: float) -> dict:
        return {"concurrency": concurrency, "status": "ok", "output_throughput": tps, "ttft_p99": 900.0,
                "tpot_p50": 1000.0 * concurrency / tps}

    cells = [st.Cell(name="a", base="a", status="done", levels=[level(1, 30.0), level(8, 180.0)]),
             st.Cell(name="b", base="b", status="done", levels=[level(1, 28.0), level(8, 90.0)]),
             st.Cell(name="c", base="c", status="crashed", levels=[level(1, 20.0)])]
    return st.CampaignState(id="c1", profile="box", status="finished", cells=cells,
                            spec={"sweep": {"levels": [1, 8], "slo": {"ttft_ms": 8000}}})


def test_the_answer_holds_what_the_separate_calls_gave():
    state = _campaign()
    got = answer(state)
    comp = compare(state)
    assert got.comparison.to_json() == comp.to_json()
    assert got.verdict == comp.verdict()
    assert got.slo_lines == (slo_lines(comp) if comp.leader else [])
    assert got.frontier == frontier(comp, None, {"ttft_ms": 8000}).to_json()
    assert [row["name"] for row in got.grid_rows] == ["a", "b", "c"]
    assert [row["repeats"] for row in got.grid_rows] == [r.repeats for r in comp.results]
    assert got.grid_rows[0]["levels"] == comp.results[0].levels


def test_the_answer_is_computed_on_a_worker_thread_alike():
    state = _campaign()
    here = answer(state)
    there = asyncio.run(asyncio.to_thread(answer, state))
    assert there.comparison.to_json() == here.comparison.to_json()
    assert there.grid_rows == here.grid_rows and there.frontier == here.frontier
