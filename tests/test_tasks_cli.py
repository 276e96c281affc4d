"""`gpudeck tasks ...` as an operator and a script use it."""
from __future__ import annotations

import json

from console.cli import main
from profiles import store
from profiles.profile import Profile
from console.store.suggest import suggest_from_crash
from console.store.task_board import TaskBoard
from console.store.tasks import tasks_file
from tests.cli import gpudeck

FIELDS = {"id", "text", "status", "priority", "order", "created", "updated", "notes", "crash", "run",
          "config", "source", "conflict_of"}


def _json(capsys, argv) -> dict:
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_add_edit_done_rm_and_list_json_with_every_field(capsys):
    added = _json(capsys, ["tasks", "add", "Check EP8 server status", "--priority", "high", "--json"])
    tid = added["task"]["id"]
    _json(capsys, ["tasks", "edit", str(tid), "--text", "Check EP8 and rerun 256/512", "--status",
                   "in_progress", "--json"])
    other = _json(capsys, ["tasks", "add", "Update findings", "--priority", "low", "--json"])["task"]["id"]
    _json(capsys, ["tasks", "done", str(other), "--json"])
    doc = _json(capsys, ["tasks", "list", "--json"])
    assert [t["id"] for t in doc["tasks"]] == [tid, other]
    for task in doc["tasks"]:
        assert set(task) == FIELDS
    first = doc["tasks"][0]
    assert (first["text"], first["status"], first["priority"]) == (
        "Check EP8 and rerun 256/512", "in_progress", "high")
    assert doc["tasks"][1]["status"] == "completed"
    assert doc["summary"] == "1▶"
    assert main(["tasks", "rm", str(other)]) == 0
    assert [t.id for t in TaskBoard.for_profile("local").tasks] == [tid]


def test_profile_option_before_or_after_the_action(capsys):
    store.save(Profile(name="h200-lab", transport="local"))
    assert main(["tasks", "--profile", "h200-lab", "add", "one"]) == 0
    assert main(["tasks", "add", "two", "--profile", "h200-lab"]) == 0
    assert main(["--profile", "h200-lab", "tasks", "add", "three"]) == 0
    capsys.readouterr()
    assert [t.text for t in TaskBoard.for_profile("h200-lab").tasks] == ["one", "two", "three"]
    assert TaskBoard.for_profile("local").tasks == []


def test_text_list_hides_done_and_shows_suggestions(capsys):
    main(["tasks", "add", "open one", "--priority", "high"])
    main(["tasks", "add", "finished", "--status", "completed"])
    suggest_from_crash("local", {"config": "tp8-ep8-memsafe", "class": "cuda-illegal-address",
                                 "time": "2026-11-29T14:02:11"}, "c.json")
    capsys.readouterr()
    assert main(["tasks", "list"]) == 0
    out = capsys.readouterr().out
    assert "open one" in out and "finished" not in out and "1 done or cancelled hidden" in out
    assert "Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)" in out
    assert main(["tasks", "list", "--all"]) == 0
    assert "finished" in capsys.readouterr().out
    assert main(["tasks", "accept", "crash:c", "--json"]) == 0  # keyed by the bare record id
    accepted = json.loads(capsys.readouterr().out)["task"]
    assert accepted["crash"] == "c" and accepted["source"] == "crash:c"


def test_export_markdown_and_json(capsys):
    main(["tasks", "add", "try flashinfer_cutedsl MoE backend"])
    capsys.readouterr()
    assert main(["tasks", "export"]) == 0
    md = capsys.readouterr().out
    assert "### Pending (1)" in md and "- [ ] **medium** try flashinfer_cutedsl MoE backend" in md
    doc = _json(capsys, ["tasks", "export", "--json"])
    assert doc["tasks"][0]["text"] == "try flashinfer_cutedsl MoE backend"


def test_bad_input_is_one_line_on_stderr_and_non_zero(capsys):
    assert main(["tasks", "done", "7"]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "no task 7" in err
    assert main(["tasks", "edit", "x", "--text", "y"]) == 2
    assert main(["tasks", "edit", "1"]) == 2
    assert main(["tasks", "threshold", "lots"]) == 2
    assert main(["tasks", "dismiss", "nope"]) == 1
    for line in capsys.readouterr().err.splitlines():
        assert line.startswith("gpudeck: ")


def test_corrupt_file_reported_with_line_not_overwritten():
    main(["tasks", "add", "keep me"])
    path = tasks_file("local")
    broken = path.read_text().replace('text = "keep me"', 'text = keep me')
    path.write_text(broken)
    for argv in (["tasks", "list"], ["tasks", "list", "--json"], ["tasks", "add", "more"]):
        proc = gpudeck(*argv)
        assert proc.returncode == 1, argv
        assert proc.stdout == ""
        assert proc.stderr.count("\n") == 1 and "Traceback" not in proc.stderr
        line = broken.splitlines().index("text = keep me") + 1
        assert f"tasks.toml:{line}:" in proc.stderr and "read-only" in proc.stderr
    assert path.read_text() == broken


def test_threshold_and_suggestions_scan(capsys):
    from profiles.paths import profile_data_dir

    runs = profile_data_dir("local") / "runs"
    runs.mkdir(parents=True)
    (runs / "sweep-1400.json").write_text(json.dumps({"levels": [
        {"concurrency": 256, "status": "failed", "completed": 13, "failed": 243}]}))
    doc = _json(capsys, ["tasks", "suggestions", "--scan", "--json"])
    assert [s["key"] for s in doc["suggestions"]] == ["sweep:sweep-1400:256"]
    assert main(["tasks", "dismiss", "sweep:sweep-1400:256"]) == 0
    assert capsys.readouterr().out == "dismissed sweep:sweep-1400:256\n"
    doc = _json(capsys, ["tasks", "suggestions", "--scan", "--json"])
    assert doc["suggestions"] == [] and doc["dismissed"] == ["sweep:sweep-1400:256"]
    assert _json(capsys, ["tasks", "threshold", "5", "--json"]) == {"efficiency_threshold_pct": 5.0}
    assert _json(capsys, ["tasks", "threshold", "off", "--json"]) == {"efficiency_threshold_pct": None}
