"""A finished sweep reads the same live as when it is shown again from its saved document."""
from __future__ import annotations

from pathlib import Path

from console.bench.events import parse_line
from console.bench.live import SweepView, view_from_run

FIXTURES = Path(__file__).parent / "fixtures" / "bench"


def test_client_lag_of_a_finished_sweep_is_the_saved_one():
    for recording in ("sweep_ok.jsonl", "sweep_died.jsonl"):
        events = [parse_line(line) for line in (FIXTURES / recording).read_text().splitlines()]
        live = SweepView()
        for event in events:
            live.apply(event)
        assert not live.running
        saved = {"levels": [e["summary"] for e in events if e["event"] == "level-end"]}
        again = view_from_run(saved)
        assert live.lag_max_ms is not None
        assert live.lag_max_ms == again.lag_max_ms, recording


def test_a_level_cut_off_by_a_lost_link_has_ended_for_the_title_and_the_stop_question():
    """The tab title and the Bench tab's stop question count finished levels one way (FINAL)."""
    from console.bench.live import LevelView

    view = SweepView(running=True, levels=[LevelView(1, status="ok"), LevelView(2, status="interrupted"),
                                           LevelView(4, status="running")])
    assert view.finished_levels == 2 and view.summary_text() == "■ 2/3"
