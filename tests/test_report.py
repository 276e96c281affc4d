"""`gpudeck report`: a findings document from a profile with two runs, a crash, configs and tasks."""
from __future__ import annotations

import json

import pytest

from console.cli import main
from console.report import ReportError, refresh_document, write_report
from console.report.sections import roofline_section
from profiles import store
from profiles.paths import profile_data_dir
from profiles.profile import profile_from_dict
from console.store.task_board import TaskBoard

HEADINGS = ["## Host and GPUs", "## Launch configs", "## Benchmark runs", "## Roofline", "## Crashes",
            "## Task board"]


def _level(conc, status, done, failed, tok, ttft, tpot):
    return {"concurrency": conc, "status": status, "num_prompts": done + failed, "completed": done,
            "failed": failed, "errors": [], "output_throughput": tok,
            "ttft_ms": {"mean": ttft[0], "median": ttft[0], "p90": ttft[1], "p99": ttft[1], "std": 1.0},
            "tpot_ms": {"mean": tpot[0], "median": tpot[0], "p90": tpot[1], "p99": tpot[1], "std": 0.5}}


RUN_A = {"url": "http://127.0.0.1:30000", "model": "GLM-5-NVFP4",
         "workload": {"input_len": 1024, "output_len": 256},
         "levels": [_level(1, "ok", 32, 0, 10.36, (412.0, 520.5), (96.13, 99.02)),
                    _level(64, "ok", 512, 0, 540.2, (830.4, 1502.9), (110.5, 131.25))]}
RUN_B = {"url": "http://127.0.0.1:30000", "model": "GLM-5-NVFP4",
         "levels": [_level(1, "ok", 32, 0, 11.02, (401.2, 498.0), (90.4, 93.7)),
                    _level(256, "failed", 13, 243, None, (None, None), (None, None)),
                    {"concurrency": 512, "status": "skipped"}]}
CRASH = {"id": "20261129-140211-l1", "config": "tp8-ep8-memsafe", "class": "cuda-illegal-address",
         "time": "2026-11-29T14:02:11+0000", "line": 812, "exit_status": 1,
         "summary": "CUDA error: an illegal memory access was encountered",
         "excerpt": ["[14:02:11 TP3] Scheduler hit an exception: Traceback (most recent call last):",
                     "RuntimeError: CUDA error: an illegal memory access was encountered"],
         "sweep": "sweep-b"}
RECORD = {"id": "l1", "config": "tp8-ep8-memsafe", "script": "/opt/scripts/tp8-ep8-memsafe.sh",
          "state": "crashed", "started_at": 1764424930.0, "crash_record": CRASH["id"],
          "flags": {"tp": 8, "ep": 1, "mem_fraction_static": 0.75, "max_running_requests": 512}}


@pytest.fixture
def lab():
    profile = profile_from_dict("h200-lab", {"transport": "local", "description": "8x H200 lab",
                                             "gpu": {"name": "H200", "count": 8},
                                             "server": {"url": "http://127.0.0.1:30000"}})
    store.save(profile)
    data = profile_data_dir("h200-lab")
    for folder, name, doc in (("runs", "sweep-a", RUN_A), ("runs", "sweep-b", RUN_B),
                              ("crashes", CRASH["id"], CRASH), ("servers", "l1", RECORD)):
        (data / folder).mkdir(parents=True, exist_ok=True)
        (data / folder / f"{name}.json").write_text(json.dumps(doc))
    (data / "runs" / "sweep-a.requests.jsonl").write_text('{"not": "a run"}\n')
    import os
    os.utime(data / "runs" / "sweep-a.json", (1_000_000_000, 1_000_000_000))
    board = TaskBoard.for_profile("h200-lab")
    t = board.add("Complete theoretical max single-stream perf analysis", priority="high")
    board.edit(t.id, status="in_progress")
    board.add("Check EP8 server status and rerun 256/512", priority="high")
    done = board.add("Update findings", priority="low")
    board.edit(done.id, status="completed")
    return profile


def _section(text: str, heading: str) -> str:
    start = text.index(heading)
    end = text.index("<!-- gpudeck:end", start)
    return text[start:end]


def _table_rows(block: str) -> list[list[str]]:
    rows = [line for line in block.splitlines() if line.startswith("| ")]
    return [[c.strip() for c in row.strip("|").split(" | ")] for row in rows[2:]]


def test_report_has_every_section_and_the_stored_numbers(lab):
    path, _ = write_report(lab, live=False)
    text = path.read_text()
    assert path == profile_data_dir("h200-lab") / "findings.md"
    for heading in HEADINGS:
        assert text.count(heading + "\n") == 1, heading

    runs = _section(text, "## Benchmark runs")
    assert runs.index("### sweep-a") < runs.index("### sweep-b")  # oldest first
    assert "requests" not in runs
    for name, doc in (("sweep-a", RUN_A), ("sweep-b", RUN_B)):
        block = runs[runs.index(f"### {name}"):]
        block = block[:block.index("### sweep-b")] if name == "sweep-a" else block
        rows = _table_rows(block)
        assert len(rows) == len(doc["levels"])
        for row, level in zip(rows, doc["levels"]):
            assert row[0] == str(level["concurrency"]) and row[1] == level["status"]
            tok = level.get("output_throughput")
            assert row[3] == (f"{tok:,.2f}" if tok is not None else "N/A")
            if "ttft_ms" in level and level["ttft_ms"]["median"] is not None:
                assert row[2] == f"{level['completed']}/{level['failed']}"
                assert row[4] == f"{level['ttft_ms']['median']:,.1f} / {level['ttft_ms']['p99']:,.1f}"
                assert row[5] == f"{level['tpot_ms']['median']:,.2f} / {level['tpot_ms']['p99']:,.2f}"
            else:
                assert "N/A" in row[4] and "N/A" in row[5]
    assert "input len 1024" in runs and "GLM-5-NVFP4" in runs

    crashes = _section(text, "## Crashes")
    assert "cuda-illegal-address" in crashes and "tp8-ep8-memsafe" in crashes
    for line in CRASH["excerpt"]:
        assert line in crashes
    assert "decisive log line: 812" in crashes and "Exit status: 1" in crashes

    configs = _section(text, "## Launch configs")
    assert "### tp8-ep8-memsafe" in configs
    assert ["ep", "1"] in _table_rows(configs) and ["mem_fraction_static", "0.75"] in _table_rows(configs)

    host = _section(text, "## Host and GPUs")
    assert "8 × H200" in host and "8x H200 lab" in host

    assert "Roofline skipped: the profile names no model config" in _section(text, "## Roofline")

    tasks = _section(text, "## Task board")
    assert tasks.index("In progress (1)") < tasks.index("Pending (1)") < tasks.index("Completed (1)")
    assert "- [x] **low** Update findings" in tasks


def test_rerun_refreshes_and_keeps_the_operators_notes(lab):
    path, _ = write_report(lab, live=False)
    notes = "\n## My notes\n\nThe EP8 script is really TP8. Keep this paragraph.\n"
    path.write_text(path.read_text() + notes)
    TaskBoard.for_profile("h200-lab").add("Try flashinfer_cutedsl MoE backend")
    (profile_data_dir("h200-lab") / "runs" / "sweep-c.json").write_text(json.dumps(RUN_A))
    write_report(lab, live=False)
    text = path.read_text()
    for heading in HEADINGS:
        assert text.count(heading + "\n") == 1
    assert text.count("# Findings: h200-lab") == 1
    assert "Try flashinfer_cutedsl MoE backend" in text and "### sweep-c" in text
    assert text.count("Keep this paragraph.") == 1
    assert text.index("Keep this paragraph.") > text.index("<!-- gpudeck:end tasks -->")


def test_broken_markers_leave_the_file_alone(lab, tmp_path):
    out = tmp_path / "findings.md"
    write_report(lab, out=out, live=False)
    broken = out.read_text().replace("<!-- gpudeck:end runs -->", "")
    out.write_text(broken)
    with pytest.raises(ReportError):
        write_report(lab, out=out, live=False)
    assert out.read_text() == broken


def test_missing_data_is_a_sentence_not_an_error():
    text = refresh_document(None, {"runs": "## Benchmark runs\n\nNo benchmark runs yet."})
    assert "No benchmark runs yet." in text
    store.save(profile_from_dict("empty", {"transport": "local"}))
    path, _ = write_report(store.load("empty"), live=False)
    text = path.read_text()
    for phrase in ("No benchmark runs yet", "No crashes recorded", "No launch configs known yet",
                   "No tasks on the board yet", "Roofline skipped"):
        assert phrase in text


def test_roofline_section_efficiency_per_level():
    roof = {"model": {"name": "GLM-5-NVFP4", "total_params": 743.9e9, "active_params": 40.8e9},
            "ideal": {"single_stream_tok_s": 309.0}, "realistic": {"single_stream_tok_s": 229.0},
            "levels": [{"batch": 1, "tok_s_ideal": 309.0, "tok_s_realistic": 229.0, "bound": "memory"},
                       {"batch": 64, "tok_s_ideal": 9000.0, "tok_s_realistic": 2000.0, "bound": "communication"},
                       {"batch": 512, "tok_s_ideal": 20000.0, "tok_s_realistic": 3000.0, "bound": "communication"}],
            "assumptions": {"allreduce_alpha_us": 10, "allreduce_beta_GBps": 50}}
    md = roofline_section(roof, None, {1: (10.36, "sweep-a"), 64: (540.2, "sweep-a")})
    rows = {r[0]: r for r in _table_rows(md)}
    assert rows["1"][3] == "10.36" and rows["1"][4] == f"{100 * 10.36 / 309:.1f}%" == "3.4%"
    assert rows["1"][5] == f"{100 * 10.36 / 229:.1f}%"
    assert rows["64"][4] == f"{100 * 540.2 / 9000:.1f}%" and rows["64"][6] == "communication"
    assert rows["512"][3] == "N/A" and rows["512"][4] == "N/A" and rows["512"][7] == "N/A"  # no run measured it
    assert "- allreduce_alpha_us: 10" in md and "743.9B total" in md


def test_a_level_that_reports_no_counts_reads_n_a_in_the_run_table():
    from console.report.sections import run_table

    rows = _table_rows(run_table([{"concurrency": 2, "status": "failed"}]))
    assert rows[0][2] == "N/A" and rows[0][3] == "N/A"


def test_cli_report_writes_where_told(lab, tmp_path, capsys):
    out = tmp_path / "notes" / "findings.md"
    assert main(["report", "--profile", "h200-lab", "--out", str(out), "--offline", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["path"] == str(out) and doc["runs"] == 2 and doc["crashes"] == 1 and doc["tasks"] == 3
    assert out.exists()
    assert main(["report", "--profile", "nope", "--offline"]) == 1
    assert capsys.readouterr().err.count("\n") == 1


def test_live_report_on_the_local_host_names_what_it_found(lab):
    path, data = write_report(store.load("h200-lab"), live=True)
    host = _section(path.read_text(), "## Host and GPUs")
    if data.gpus is not None:
        assert f"{data.gpus['state']}" in host
        for gpu in data.gpus.get("gpus") or []:
            assert f"| {gpu['index']} | {gpu['name']} |" in host
    else:
        assert f"No live GPU snapshot: {data.gpus_note}" in host


def test_a_broken_task_file_is_named_in_the_report(lab):
    from console.store.tasks import tasks_file

    path = tasks_file("h200-lab")
    path.write_text(path.read_text() + "\n[[tasks]\n")
    before = path.read_text()
    out, _ = write_report(lab, live=False)
    tasks = _section(out.read_text(), "## Task board")
    assert "does not parse" in tasks and "tasks.toml:" in tasks
    assert path.read_text() == before


def test_roofline_from_the_profiles_model_config(lab, shared_dir):
    profile = profile_from_dict("h200-lab", {
        "transport": "local", "gpu": {"name": "H200", "count": 8},
        "model": {"config": str(shared_dir / "model-configs" / "GLM-5-NVFP4.json"),
                  "quant_config": str(shared_dir / "model-configs" / "GLM-5-NVFP4.hf_quant_config.json")}})
    store.save(profile)
    out, data = write_report(profile, live=False)
    section = _section(out.read_text(), "## Roofline")
    if data.roofline is None:
        # The roofline command is someone else's and may not be in this build yet: the
        # section says why it is missing, in one sentence, instead of failing the report.
        assert section.startswith("## Roofline\n\nRoofline skipped: ") and data.roofline_note
        return
    rows = {r[0]: r for r in _table_rows(section)}
    assert set(rows) == {"1", "64", "256", "512"}  # every concurrency the runs tried
    measured = {1: 11.02}  # one whole run, the newest that measured something (sweep-b), as on the Roofline tab
    for batch, tok in measured.items():
        level = next(lv for lv in data.roofline["levels"] if lv["batch"] == batch)
        assert rows[str(batch)][3] == f"{tok:,.2f}" and rows[str(batch)][7] == "sweep-b"
        assert rows[str(batch)][4] == f"{100 * tok / level['tok_s_ideal']:.1f}%"
    assert rows["64"][3] == "N/A" and rows["64"][7] == "N/A"   # sweep-a's level is another run's
    assert rows["256"][3] == "N/A" and rows["256"][4] == "N/A"
    assert "Assumptions:" in section
    # Runs with levels below the board's threshold (10% by default) are offered once per run, never added.
    board = TaskBoard.for_profile("h200-lab")
    low = [b for b, tok in measured.items()
           if 100 * tok / next(lv for lv in data.roofline["levels"] if lv["batch"] == b)["tok_s_ideal"] < 10]
    assert low
    assert sorted(s.key for s in board.suggestions) == ["efficiency:sweep-b"]
    assert len(board.tasks) == 3
    write_report(profile, live=False)  # a second report offers nothing new
    assert len(TaskBoard.for_profile("h200-lab").suggestions) == len(board.suggestions)


def test_a_live_server_judged_hung_reads_crashed_in_the_report_as_on_the_server_tab():
    from console.report.document import _configs_from_records
    from console.store import launches

    launches.save("local", launches.LaunchRecord(id="a-1", config="a", script=None, log=None, exit_file=None,
                                               state="ready", crash_class="hang"))
    assert [c["state"] for c in _configs_from_records("local")] == ["crashed"]
    assert launches.load_all("local")[0].to_json()["shown_state"] == "crashed"  # what `server list --json` gives


def test_a_report_judges_the_run_it_compares_over_all_its_levels_as_when_it_was_saved():
    """The report offers an efficiency suggestion for the one run its Roofline section reads (the
    store's rule: the newest run that measured something), naming its worst level among all its own
    levels; an older run is not judged again, and a campaign's cell run is judged by its campaign only."""
    from console.report.document import ReportData, offer_efficiency_suggestions
    from console.store import campaigns as st

    profile = profile_from_dict("lab2", {"transport": "local"})
    store.save(profile)
    def ok(c, tok):
        return {"concurrency": c, "status": "ok", "output_throughput": tok, "failed": 0}

    failed = {"concurrency": 8, "status": "failed", "output_throughput": None, "failed": 3}
    runs = [{"name": "old", "doc": {"levels": [ok(2, 5.0)]}},                  # lower, but not the compared run
            {"name": "new", "doc": {"levels": [ok(1, 50.0), ok(2, 8.0)]}},
            {"name": "broken", "doc": {"levels": [failed]}}]                    # newest, measured nothing
    roofline = {"levels": [{"batch": b, "tok_s_ideal": 100.0} for b in (1, 2, 4, 8)]}
    data = ReportData(profile=profile, runs=runs, board=TaskBoard.for_profile("lab2"), roofline=roofline)
    offered = offer_efficiency_suggestions(profile, data)
    assert [s.key for s in TaskBoard.for_profile("lab2").suggestions] == ["efficiency:new"]
    assert len(offered) == 1 and "concurrency 2 of new (1 of 2 levels below)" in offered[0]

    st.save(st.CampaignState(id="c1", profile="lab2", spec={}, cells=[st.Cell(name="a", base="a", run_id="cell")]))
    runs.append({"name": "cell", "doc": {"levels": [ok(4, 1.0)]}})             # a campaign cell's run, newest
    data = ReportData(profile=profile, runs=runs, board=TaskBoard.for_profile("lab2"), roofline=roofline)
    assert offer_efficiency_suggestions(profile, data) == []
