"""External text never drives the terminal: the boundary itself, then every CLI path with the corpus."""
from __future__ import annotations

import json
import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from console.safe_text import CleanWriter, clean, clean_line, safe_cell, safe_text
from tests.cli import gpudeck_sound
from tests.hostile_text import HOSTILE, LINE, MARK, unsafe_chars

ROOT = Path(__file__).resolve().parent.parent


# ---- the boundary --------------------------------------------------------------------------

@pytest.mark.parametrize("text", HOSTILE)
def test_clean_leaves_no_control_character(text):
    assert unsafe_chars(clean(text)) == []
    assert unsafe_chars(clean_line(text)) == []
    assert "\n" not in clean_line(text)


def test_clean_makes_sequences_visible_and_drops_only_colours():
    assert clean("\x1b]52;c;aGk=\x07") == "␛]52;c;aGk=␇"
    assert clean("\x1b[2J") == "␛[2J"
    assert clean("\x1b[31mred\x1b[0m") == "red"
    assert clean("\x9b2J") == "\\u009b2J"
    assert clean("a\u202eb") == "a\\u202eb"
    assert clean("bad \udcff byte") == "bad \\udcff byte"


def test_clean_keeps_ordinary_text_tabs_and_newlines():
    text = "GPU 0\tH100 80GB · 95% · ✔ [bold]literal[/bold] ünïcode 日本"
    assert clean(text) is text
    assert clean("one\r\ntwo\nthree") == "one\ntwo\nthree"
    assert clean_line("one\r\ntwo") == "one␊two"


def test_safe_text_is_never_markup():
    text = safe_text("[link=file:///etc/passwd]x[/link] [bold red]y")
    assert text.plain == "[link=file:///etc/passwd]x[/link] [bold red]y"
    assert not text.spans


def test_safe_cell_keeps_styles_and_swaps_controls_one_for_one():
    from rich.text import Text

    cell = Text("ab\x1bc", style="red")
    cell.stylize("bold", 0, 2)
    out = safe_cell(cell)
    assert out.plain == "ab␛c" and out.style == "red" and out.spans == cell.spans
    assert safe_cell("[b]x").plain == "[b]x"
    assert safe_cell(7) == 7


def test_clean_writer_cleans_every_write(capsys):
    writer = CleanWriter(sys.stdout)
    print("\x1b]52;c;aGk=\x07", file=writer)
    writer.write("\x1b")
    writer.write("[2J\n")
    out = capsys.readouterr().out
    assert unsafe_chars(out) == [] and "␛]52" in out


def test_json_is_left_to_json_escaping():
    doc = json.dumps({"t": LINE})
    assert clean(doc) == doc
    assert json.loads(doc)["t"] == LINE


# ---- the CLI -------------------------------------------------------------------------------


def _assert_clean(result) -> None:
    assert unsafe_chars(result.stdout) == [], result.stdout
    assert unsafe_chars(result.stderr) == [], result.stderr


def test_triage_prints_hostile_log_lines_harmlessly(tmp_path):
    log = tmp_path / "server.log"
    body = "".join(f"[2026-11-30 10:00:0{i % 10}] {LINE} {i}\n" for i in range(5))
    body += f"RuntimeError: CUDA error: an illegal memory access was encountered {LINE}\n"
    log.write_text(body, encoding="utf-8", errors="surrogateescape")
    result = gpudeck_sound("triage", str(log))
    _assert_clean(result)
    assert MARK in result.stdout and "[bold red]x.sh" in result.stdout
    doc = json.loads(gpudeck_sound("triage", str(log), "--json").stdout)
    assert any(MARK in line for line in doc["excerpt"])


def test_triage_names_a_hostile_file_name_harmlessly(tmp_path):
    result = gpudeck_sound("triage", str(tmp_path / "\x1b]52;c;aGk=\x07missing.log"), status=1)
    _assert_clean(result)
    assert "␛]52" in result.stderr


def _hostile_board():
    from console.store.task_board import TaskBoard

    board = TaskBoard.for_profile("local")
    for text in HOSTILE:
        board.add(f"{MARK} {text}", notes=text)
    return board


def test_tasks_list_and_export_print_hostile_text_harmlessly():
    _hostile_board()
    for argv in (["tasks", "list"], ["tasks", "export"], ["tasks", "list", "--all"]):
        result = gpudeck_sound(*argv)
        _assert_clean(result)
        assert result.stdout.count(MARK) == len(HOSTILE)
        # read literally: never as rich markup; Markdown's brackets escaped where the output is Markdown
        literal = "[link=file:///etc/passwd]innocent[/link]"
        assert (literal.replace("[", "\\[").replace("]", "\\]") if "export" in argv else literal) in result.stdout
    # one task, one line: a newline or CR in the text cannot forge another row
    listed = [line for line in gpudeck_sound("tasks", "list").stdout.splitlines() if MARK in line]
    assert len(listed) == len(HOSTILE)


def test_tasks_json_keeps_the_text_exact():
    _hostile_board()
    result = gpudeck_sound("tasks", "list", "--json")
    assert unsafe_chars(result.stdout) == []
    texts = [t["text"] for t in json.loads(result.stdout)["tasks"]]
    from console.store.task_board import TaskBoard

    # exactly what the board holds (the board itself drops a bare CR), escapes and all
    assert sorted(texts) == sorted(t.text for t in TaskBoard.for_profile("local").tasks)
    assert f"{MARK} {HOSTILE[0]}" in texts


def test_report_writes_and_prints_hostile_text_harmlessly():
    from console.store import crashes
    from console.store.launches import LaunchRecord

    _hostile_board()
    record = LaunchRecord(id="r1", config=f"cfg {HOSTILE[5]}", script=None, log="/tmp/x.log", exit_file=None)
    verdict = SimpleNamespace(cls="cuda_illegal_address", line=7, summary=LINE, excerpt=HOSTILE, server="sglang")
    crashes.write_crash("local", record, verdict)
    result = gpudeck_sound("report", "--offline")
    _assert_clean(result)
    from profiles.paths import profile_data_dir

    findings = (profile_data_dir("local") / "findings.md").read_text()
    assert unsafe_chars(findings) == []
    assert findings.count(MARK) >= len(HOSTILE)


def test_gpus_parse_prints_hostile_process_names_harmlessly(tmp_path):
    fixture = ROOT / "tests" / "fixtures" / "nvidia-smi" / "apps-busy-8x.csv"
    lines = fixture.read_text().splitlines()
    hostile = [lines[0]] + [
        line.rsplit(",", 1)[0] + ", " + f"{MARK}{text}".replace(",", " ").replace("\n", " ")
        for line, text in zip(lines[1:], HOSTILE)]
    smi = tmp_path / "apps.csv"
    smi.write_text("\n".join(hostile) + "\n")
    result = gpudeck_sound("gpus", "--parse", str(smi))
    _assert_clean(result)
    assert result.stdout.count(MARK) == len(hostile) - 1
    assert unsafe_chars(gpudeck_sound("gpus", "--parse", str(smi), "--json").stdout) == []


def test_server_logs_prints_hostile_lines_harmlessly(tmp_path):
    from console.store import launches
    from console.store.launches import LaunchRecord

    log = tmp_path / "server.log"
    log.write_text("".join(f"{MARK} {text}\n" for text in HOSTILE))
    launches.save("local", LaunchRecord(id="r1", config="cfg", script=None, log=str(log), exit_file=None,
                                       state="stopped"))
    result = gpudeck_sound("server", "logs", "cfg", "-n", "100")
    _assert_clean(result)
    assert result.stdout.count(MARK) == len(HOSTILE)
    doc = json.loads(gpudeck_sound("server", "logs", "cfg", "-n", "100", "--json").stdout)
    # JSON carries the log exactly (a lone CR splits a line for `splitlines`, so compare joined)
    assert "\n".join(doc["lines"]) == "\n".join(f"{MARK} {text}" for text in HOSTILE).replace("\r", "\n")


def test_bench_table_shows_hostile_server_errors_harmlessly():
    from console.commands.bench import format_table

    level = {"concurrency": 1, "status": "failed", "completed": 0, "failed": 1, "output_throughput": None,
             "ttft_ms": {"median": None, "p99": None}, "tpot_ms": {"median": None, "p99": None},
             "itl_ms": {"p99": None}, "errors": HOSTILE, "server_died": None, "skipped_because": LINE}
    doc = {"run_id": "r", "url": "http://x", "model": "m", "workload": {"input_len": 1, "output_len": 1},
           "levels": [level, dict(level, server_died={"message": LINE}, errors=[])], "path": "p"}
    text = format_table(doc)
    assert unsafe_chars(text) == []
    assert text.count(MARK) == 3 and "[bold red]x.sh" in text  # two skipped notes, one death


def test_argparse_errors_with_hostile_values_are_clean():
    result = gpudeck_sound("tasks", "list", "--bogus\x1b]52;c;aGk=\x07", status=2)
    _assert_clean(result)
