"""One measurement rule: the Roofline tab, `gpudeck roofline --profile` and the report read one whole run."""
from __future__ import annotations

import json

from console.report.document import _runs, measured_by_concurrency
from console.roofline.runs import load_runs
from console.store.measured import compared_run
from console.store.runs import read_runs, runs_dir


def _run(name: str, started: str, levels: list[dict]) -> None:
    d = runs_dir("local")
    d.mkdir(parents=True, exist_ok=True)
    (d / f"{name}.json").write_text(json.dumps({"run_id": name, "started": started, "levels": levels}))


def _ok(c: int, tok: float) -> dict:
    return {"concurrency": c, "status": "ok", "output_throughput": tok, "failed": 0}


def test_the_tab_and_the_report_read_the_same_whole_run(gpudeck_home):
    _run("older", "2026-11-30T10:00:00+0000", [_ok(1, 5.0), _ok(64, 300.0)])
    _run("newer", "2026-11-30T11:00:00+0000", [_ok(1, 9.0)])
    _run("failed", "2026-11-30T12:00:00+0000", [{"concurrency": 1, "status": "failed", "failed": 4}])
    tab = load_runs(runs_dir("local")).latest
    assert tab.name == "newer" and tab.tok_s_at(64) is None
    # the report no longer fills concurrency 64 from another run
    assert measured_by_concurrency(_runs("local")) == {1: (9.0, "newer")}
    assert compared_run(read_runs("local").records).id == "newer"


def test_a_picked_run_wins_and_no_measured_run_means_the_newest(gpudeck_home):
    _run("a", "2026-11-30T10:00:00+0000", [_ok(1, 5.0)])
    _run("b", "2026-11-30T11:00:00+0000", [{"concurrency": 1, "status": "partial", "output_throughput": 3.0}])
    found = load_runs(runs_dir("local"))
    assert found.compared(str(runs_dir("local") / "b.json")).name == "b"
    assert found.compared(str(runs_dir("local") / "gone.json")).name == "a"   # a picked run since removed
    assert compared_run([], None) is None
    only_unmeasured = [r for r in read_runs("local").records if r.id == "b"]
    assert compared_run(only_unmeasured).id == "b"   # its levels then read N/A
