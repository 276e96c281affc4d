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
