"""Measured runs are read defensively and joined to the roofline by concurrency."""
from __future__ import annotations

import json

from console import roofline
from console.roofline.compare import headline, rows
from console.roofline.runs import load_runs


def test_missing_dir_means_no_runs(tmp_path):
    found = load_runs(tmp_path / "runs")
    assert found.runs == [] and found.latest is None


def test_bad_files_are_listed_not_zeroed(tmp_path):
    d = tmp_path / "runs"
    d.mkdir()
    (d / "a.json").write_text("{oops")
    (d / "b.json").write_text(json.dumps({"no_levels": 1}))
    (d / "c.json").write_text(json.dumps({"levels": [{"concurrency": 1, "output_throughput": 0, "status": "failed"},
                                                     {"concurrency": "x"}, {"concurrency": 2, "output_throughput": 5.0, "status": "ok"}]}))
    found = load_runs(d)
    assert [p.name for p, _ in found.unreadable] == ["a.json", "b.json"]
    run = found.latest
    assert run.tok_s_at(1) is None and run.tok_s_at(2) == 5.0
    assert [lv.concurrency for lv in run.levels] == [1, 2]


def test_rows_join_measurements(tmp_path, shared_dir):
    d = tmp_path / "runs"
    d.mkdir()
    (d / "s.json").write_text(json.dumps({"levels": [{"concurrency": 1, "output_throughput": 100.0, "status": "ok"},
                                                     {"concurrency": 3, "output_throughput": 250.0, "status": "ok"}]}))
    run = load_runs(d).latest
    facts = roofline.load_model(shared_dir / "model-configs" / "Llama-3.1-8B.json")
    roof = roofline.compute(facts, "H100 SXM", 1, batches=(1, 2))
    table = rows(roof, run)
    assert [r.batch for r in table] == [1, 2, 3]
    assert table[1].measured_tok_s is None and table[1].efficiency_pct is None
    assert table[2].efficiency_pct == 100 * 250.0 / roof.at(3).tok_s_ideal
    head = headline(roof, run)
    assert head.efficiency_pct == 100 * 100.0 / roof.single_stream_ideal
    assert "no measured run yet" in headline(roof, None).sentence


def test_roofline_run_counts_the_levels_the_roofline_tab_counts(tmp_path):
    """`roofline --run FILE` reads a run through the store, as the tab does: a level that says
    nothing of its status, or was cut short, measured nothing (neither feeds efficiency nor a fit)."""
    from console.roofline.runs import load_one_run

    d = tmp_path / "runs"
    d.mkdir()
    (d / "r.json").write_text(json.dumps({"run_id": "r", "levels": [
        {"concurrency": 1, "output_throughput": 10.0, "tpot_ms": {"median": 90.0}},
        {"concurrency": 2, "output_throughput": 18.0, "status": "partial", "tpot_ms": {"median": 95.0}},
        {"concurrency": 4, "output_throughput": 30.0, "status": "ok", "tpot_ms": {"median": 120.0}}]}))
    one, tab = load_one_run(d / "r.json"), load_runs(d).latest
    assert [one.tok_s_at(c) for c in (1, 2, 4)] == [tab.tok_s_at(c) for c in (1, 2, 4)] == [None, None, 30.0]
    assert one.tpot_points() == tab.tpot_points() == [(4, 0.12, None)]
    assert one.name == tab.name == "r"


def test_the_newest_run_is_the_one_started_last_wherever_it_is_read(tmp_path, gpudeck_home):
    """The Bench tab (the store's order), the Roofline tab and the report agree on the newest run,
    even when an older run's file was written last (a run copied in, or one that ended later)."""
    import os

    from console.report.document import _runs, measured_by_concurrency
    from console.store.runs import read_runs, runs_dir

    d = runs_dir("local")
    d.mkdir(parents=True)
    for name, started, tok_s, mtime in (("early", "2026-11-30T10:00:00+0000", 5.0, 2_000_000_000),
                                        ("late", "2026-11-30T11:00:00+0000", 9.0, 1_000_000_000)):
        path = d / f"{name}.json"
        path.write_text(json.dumps({"run_id": name, "started": started, "levels": [
            {"concurrency": 1, "output_throughput": tok_s, "status": "ok"}]}))
        os.utime(path, (mtime, mtime))
    assert read_runs("local").records[0].id == "late"
    assert load_runs(d).latest.name == "late"
    assert measured_by_concurrency(_runs("local")) == {1: (9.0, "late")}


def test_a_level_is_measured_exactly_when_the_task_board_sees_nothing_to_rerun():
    """The store's one rule (LevelResult.measured_tok_s) and the board's (level_problem) read the
    same level the same way: an `ok` level with failed requests is partial to both; a level cut
    off by a lost link keeps its own status, never `unknown`."""
    from console.store.runs import LevelResult, LevelStatus
    from profiles.task_suggestion import level_problem

    clean = {"concurrency": 1, "status": "ok", "output_throughput": 5.0, "completed": 8, "failed": 0}
    failing = clean | {"failed": 2}
    assert LevelResult.from_doc(clean).measured_tok_s == 5.0 and level_problem(clean) is None
    assert LevelResult.from_doc(failing).measured_tok_s is None and level_problem(failing) == "partial"
    lost = LevelResult.from_doc({"concurrency": 2, "status": "interrupted", "output_throughput": 3.0})
    assert lost.status is LevelStatus.INTERRUPTED and lost.measured_tok_s is None
