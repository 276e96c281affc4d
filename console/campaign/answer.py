"""Everything the Campaign tab shows about a campaign's answer, computed in one plain call.

The comparison (intervals, verdict, SLO lines), the grid's rows and the frontier take about a
second the first time on a campaign with samples: too long for the UI thread. `answer()` reads
only the state it is given and returns plain data, so a worker thread can run it
(`await asyncio.to_thread(answer, state, roof, roof_note)`) and the tab only draws the result.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..store.campaigns import CampaignState
from .compare import Comparison, compare, slo_lines
from .pareto import frontier, gpus_of


@dataclass
class Answer:
    """A campaign's answer as the tab draws it."""

    comparison: Comparison
    grid_rows: list[dict]          # one per cell: the cell's JSON with its levels, crash and repeats
    verdict: tuple[str, str, str]  # (label, names, rest): the one answer line
    slo_lines: list[str]           # empty unless a config leads
    frontier: dict                 # pareto.Frontier.to_json()


def answer(state: CampaignState, roof=None, roof_note: str = "") -> Answer:
    """The answer for `state` (not changed meanwhile: the runtime hands a new state per change)."""
    comp = compare(state, roof, roof_note)
    rows = [cell.to_json() | {"levels": r.levels, "crashed_at": r.crashed_at, "repeats": r.repeats}
            for cell, r in zip(state.cells, comp.results)]
    slo = (state.spec.get("sweep") or {}).get("slo") or {}
    return Answer(comparison=comp, grid_rows=rows, verdict=comp.verdict(),
                  slo_lines=slo_lines(comp) if comp.leader else [],
                  frontier=frontier(comp, gpus_of(roof), slo).to_json())
