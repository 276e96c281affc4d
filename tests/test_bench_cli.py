"""`gpudeck bench` arguments, saved runs and comparisons, without a server."""
from __future__ import annotations

import json

import pytest

from console.bench.results import RunStore, compare_runs, list_runs
from console.cli import main


@pytest.mark.parametrize("argv, message", [
    (["--url", "http://x:1", "--concurrency", "1,a"], "bad --concurrency"),
    (["--url", "http://x:1", "--concurrency", "0"], "bad --concurrency"),
    (["--url", "http://x:1"], "--concurrency is required"),
    (["--concurrency", "1"], "no --url given"),
    (["--url", "x:1", "--concurrency", "1"], "bad --url"),
    (["--url", "http://x:1", "--concurrency", "1", "--slo", "ttft"], "bad SLO"),
    (["--url", "http://x:1", "--concurrency", "1", "--json", "--events"], "pick one"),
    (["--url", "http://x:1", "--concurrency", "1", "--output-len", "0"], "--output-len must be > 0"),
    (["--url", "http://x:1", "--concurrency", "1", "--profile", "nosuch"], "no profile named"),
    (["--url", "http://x:1", "--concurrency", "1", "--api", "grpc"], "invalid choice"),
    (["--url", "http://", "--concurrency", "1"], "bad --url"),
    (["--url", "http://x:99999", "--concurrency", "1"], "bad --url"),
    (["--url", "http://x:port", "--concurrency", "1"], "bad --url"),
    (["--url", "http://[::1", "--concurrency", "1"], "bad --url"),
    (["--url", "http://x:1/ y", "--concurrency", "1"], "bad --url"),
    (["--url", "http://x:1\n", "--concurrency", "1"], "bad --url"),
    (["--url", "http://x:1", "--concurrency", "1", "--stall-timeout", "nan"], "--stall-timeout must be a finite"),
    (["--url", "http://x:1", "--concurrency", "1", "--stall-timeout", "inf"], "--stall-timeout must be a finite"),
    (["--url", "http://x:1", "--concurrency", "1", "--timeout", "-1"], "--timeout must be > 0"),
    (["--url", "http://x:1", "--concurrency", "1", "--out", "."], "is a directory"),
    (["--url", "http://x:1", "--concurrency", "1", "--out", "/nonexistent-dir/x.json"], "no directory"),
    (["--url", "http://x:1", "--request-rate", "0"], "bad --request-rate"),
    (["--url", "http://x:1", "--request-rate", "nan"], "bad --request-rate"),
    (["--url", "http://x:1", "--request-rate", "2", "--concurrency", "4"], "pick one"),
    (["--url", "http://x:1", "--concurrency", "4", "--max-concurrency", "2"], "need --request-rate"),
    (["--url", "http://x:1", "--request-rate", "2", "--ramp-up", "steep"], "bad --ramp-up"),
    (["--url", "http://x:1", "--request-rate", "2", "--burstiness", "0"], "--burstiness must be > 0"),
    (["--url", "http://x:1", "--concurrency", "1", "--extra-body", "[1]"], "bad --extra-body"),
    (["--url", "http://x:1", "--concurrency", "1", "--extra-body", "{"], "bad --extra-body"),
    (["--url", "http://x:1", "--concurrency", "1", "--header", "NoColon"], "bad --header"),
    (["--url", "http://x:1", "--concurrency", "1", "--api-key-env", "GPUDECK_SURELY_UNSET"], "is not set"),
    (["--url", "http://x:1", "--concurrency", "1", "--percentiles", "0,50"], "bad percentile"),
    (["--url", "http://x:1", "--concurrency", "1", "--range-ratio", "1"], "--range-ratio"),
    (["--url", "http://x:1", "--concurrency", "1", "--input-len", "8", "--shared-prefix-len", "7"],
     "--shared-prefix-len"),
    (["--url", "http://x:1", "--concurrency", "1", "--dataset", "/nonexistent.jsonl"], "no such file"),
    (["--url", "http://x:1", "--concurrency", "1", "--temperature", "nan"], "--temperature"),
])
def test_bad_arguments_exit_2_with_one_line(argv, message, capsys):
    with pytest.raises(SystemExit) as exc_info:
        raise SystemExit(main(["bench", *argv]))
    assert exc_info.value.code == 2
    err = capsys.readouterr().err
    assert message in err and err.count("\n") == 1


def _level(c, status, tps, ttft):
    return {"concurrency": c, "status": status, "output_throughput": tps, "request_throughput": tps / 100,
            "ttft_ms": {"median": ttft, "p99": ttft * 2}, "tpot_ms": {"median": 10, "p99": 20},
            "itl_ms": {"p99": 30}, "e2el_ms": {"median": 500}}


def _save(run_id, levels, started):
    store = RunStore("local", run_id)
    store.save({"run_id": run_id, "started": started, "url": "http://h:1", "model": "m", "status": "ok",
                "levels": levels})
    return store


def test_compare_two_saved_runs(capsys):
    _save("base", [_level(1, "ok", 100.0, 40.0), _level(64, "ok", 2000.0, 90.0)], "2026-11-29T10:00:00")
    _save("other", [_level(1, "ok", 110.0, 30.0), _level(256, "failed", 0.0, 1.0)], "2026-11-29T11:00:00")
    assert main(["bench", "--compare", "base", "other", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert [row["concurrency"] for row in doc["levels"]] == [1]
    m = doc["levels"][0]["metrics"]
    assert m["output_throughput"]["change_pct"] == pytest.approx(10.0)
    assert {k: m["ttft_ms.median"][k] for k in ("base", "other", "change_pct")} == \
        {"base": 40.0, "other": 30.0, "change_pct": pytest.approx(-25.0)}
    assert [r["run_id"] for r in list_runs("local")] == ["other", "base"]
    assert main(["bench", "--list", "--json"]) == 0
    assert [r["run_id"] for r in json.loads(capsys.readouterr().out)["runs"]] == ["other", "base"]


def test_compare_reads_a_to_b_whichever_run_is_named_first(capsys):
    """The run that started first is A, in either order of the arguments (and as the Bench tab shows it)."""
    _save("early", [_level(1, "ok", 25.0, 40.0)], "2026-11-29T10:00:00")
    _save("late", [_level(1, "ok", 24.0, 40.0)], "2026-11-29T11:00:00")
    outs = []
    for order in (["early", "late"], ["late", "early"]):
        assert main(["bench", "--compare", *order]) == 0
        outs.append(capsys.readouterr().out)
    assert outs[0] == outs[1]
    assert outs[0].startswith("A early → B late")
    assert "25.00 →      24.00  -4.0%" in outs[0]


def test_a_change_inside_the_noise_says_so(capsys):
    """A p99 that doubles over a level of four requests a run is within noise by the campaign's
    statistics (the interval of the difference holds zero); throughput far apart is beyond it."""
    import json as _json

    from console.bench.results import runs_dir

    def requests(run_id, tpot, e2el):
        path = runs_dir("local") / f"{run_id}.requests.jsonl"
        path.write_text("".join(_json.dumps({"concurrency": 1, "ok": True, "index": i, "ttft_ms": 40.0 + i,
                                             "tpot_ms": t, "output_tokens": 16, "e2el_ms": e})
                                 + "\n" for i, (t, e) in enumerate(zip(tpot, e2el))))

    _save("early", [_level(1, "ok", 100.0, 40.0)], "2026-11-29T10:00:00")
    _save("late", [{**_level(1, "ok", 10.0, 40.0), "tpot_ms": {"median": 10, "p99": 40}}], "2026-11-29T11:00:00")
    requests("early", [9.0, 10.0, 11.0, 20.0], [100.0, 100.0, 100.0, 100.0])
    requests("late", [9.0, 10.0, 12.0, 40.0], [1000.0, 1000.0, 1000.0, 1000.0])
    assert main(["bench", "--compare", "late", "early", "--json"]) == 0
    m = _json.loads(capsys.readouterr().out)["levels"][0]["metrics"]
    assert m["tpot_ms.p99"]["change_pct"] == pytest.approx(100.0)
    assert m["tpot_ms.p99"]["noise"] == "within noise"
    assert m["output_throughput"]["noise"] == "beyond noise"
    assert m["itl_ms.p99"]["noise"] is None  # no interval the campaign's statistics can put on it


def test_unknown_value_compares_as_null():
    rows = compare_runs({"levels": [_level(1, "ok", 0.0, 40.0)]},
                        {"levels": [{"concurrency": 1, "status": "failed", "output_throughput": None}]})
    assert rows[0]["metrics"]["output_throughput"] == {"base": 0.0, "other": None, "change_pct": None}


def test_compare_missing_run_is_one_line(capsys):
    assert main(["bench", "--compare", "nope", "nada"]) == 2
    assert capsys.readouterr().err.count("\n") == 1


def test_run_ids_never_collide():
    a = RunStore("local", "sweep-x")
    a.save({"levels": []})
    b = RunStore("local", "sweep-x")
    assert b.run_id == "sweep-x-2"


def test_dataset_problems_are_argument_errors(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"text": "no prompt key"}\n')
    chat = tmp_path / "chat.jsonl"
    chat.write_text(json.dumps({"messages": [{"role": "user", "content": "hi"}]}) + "\n")
    for path, message in ((bad, "line 1"), (chat, "use --api chat")):
        assert main(["bench", "--url", "http://x:1", "--concurrency", "1", "--dataset", str(path)]) == 2
        err = capsys.readouterr().err
        assert message in err and err.count("\n") == 1


def test_vllm_format_names_one_file_per_level(tmp_path):
    from pathlib import Path

    from console.bench.vllm_format import level_file, level_result

    requests = tmp_path / "r.jsonl"
    requests.write_text("\n".join(json.dumps(row) for row in (
        {"level": 0, "index": 0, "ok": True, "ttft_ms": 20.0, "itl_ms": [5.0, 6.0], "input_tokens": 8,
         "output_tokens": 3, "error": None},
        {"level": 1, "index": 0, "ok": False, "ttft_ms": None, "itl_ms": [], "input_tokens": None,
         "output_tokens": None, "error": "connection refused"})) + "\n")
    levels = [{**_level(None, "ok", 100.0, 20.0), "max_concurrency": 4, "request_rate": 2.0, "completed": 1,
               "ttft_ms": {"mean": 20.0, "median": 20.0, "std": 0.0, "p99": 20.0, "p99.9": 20.0}},
              {**_level(8, "failed", 0.0, 1.0), "completed": 0}]
    doc = {"run_id": "sweep-1", "started": "2026-11-30T08:00:00+0000", "model": "m", "api": "completions",
           "requests_path": str(requests), "levels": levels}
    assert level_file(Path("/o/res.json"), levels[0]) == Path("/o/res-r2-c4.json")
    assert level_file(Path("/o/res.json"), levels[1]) == Path("/o/res-c8.json")
    first = level_result(doc, levels[0])
    assert first["request_rate"] == 2.0 and first["max_concurrency"] == 4
    assert first["ttfts"] == [0.02] and first["itls"] == [[0.005, 0.006]] and first["p99.9_ttft_ms"] == 20.0
    second = level_result(doc, levels[1])
    assert second["request_rate"] == "inf" and second["errors"] == ["connection refused"]
    assert second["ttfts"] == [0.0] and second["output_lens"] == [0]


def test_vllm_format_says_why_generated_texts_are_empty(tmp_path):
    """The client keeps no generated text; the export says so beside the empty strings."""
    from console.bench.vllm_format import level_result

    requests = tmp_path / "r.jsonl"
    requests.write_text(json.dumps({"level": 0, "index": 0, "ok": True, "ttft_ms": 20.0, "itl_ms": [5.0],
                                    "input_tokens": 8, "output_tokens": 2, "error": None}) + "\n")
    level = {**_level(4, "ok", 100.0, 20.0), "completed": 1}
    doc = {"run_id": "sweep-1", "model": "m", "requests_path": str(requests), "levels": [level]}
    out = level_result(doc, level)
    assert out["generated_texts"] == [""]
    assert "keeps no generated text" in out["generated_texts_note"]


def test_a_run_list_line_marks_an_unknown_status_n_a():
    from console.store.runs import run_line

    assert run_line({"run_id": "r", "status": None, "url": None, "levels": [1, 2]}) == "r  N/A     N/A  levels 1,2"
    assert run_line({"run_id": "r", "status": "ok", "url": "http://h:1/v1", "levels": [4]}) == "r  ok      http://h:1/v1  levels 4"


def test_out_help_says_it_is_a_file_and_names_the_per_level_files():
    """The help and the refusal of `--out DIR` agree: --out is a file, and vLLM's per-level files go beside it."""
    from tests.cli import gpudeck

    text = " ".join(gpudeck("bench", "--help").stdout.split())
    assert "--out FILE" in text and "not a directory" in text and "out-c64.json" in text
    assert "FILE-c64.json" in text
