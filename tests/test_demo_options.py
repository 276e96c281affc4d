"""`gpudeck demo` options: global options after the command, and the report the operator wrote is not lost silently."""
from __future__ import annotations

import os

import pytest

from console import demo
from console.cli import build_parser
from console.commands.demo import _close_or_keep
from profiles.paths import profile_data_dir


def test_global_options_work_after_the_command():
    parser = build_parser()
    assert parser.parse_args(["demo", "--readonly"]).readonly
    assert parser.parse_args(["--readonly", "demo"]).readonly
    assert not parser.parse_args(["demo"]).readonly
    assert parser.parse_args(["tui", "-p", "box"]).profile == "box"
    assert parser.parse_args(["-p", "box", "tui"]).profile == "box"


@pytest.fixture
def world(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    return demo.setup(tmp_path / "demo")


def test_nothing_written_nothing_asked(world):
    def never(_):
        raise AssertionError("asked")

    assert _close_or_keep(world, ask=never, interactive=True) is False
    assert not world.root.exists()


def test_a_written_report_is_kept_when_the_operator_says_so(world):
    (profile_data_dir("demo") / "findings.md").write_text("# findings\n")
    questions = []
    kept = _close_or_keep(world, ask=lambda q: questions.append(q) or "y", interactive=True)
    assert kept and (profile_data_dir("demo") / "findings.md").exists()
    assert "findings.md" in questions[0] and "[y/N]" in questions[0]
    world.close()


def test_a_written_report_is_removed_on_no_and_the_way_to_keep_it_is_said(world, capsys):
    (profile_data_dir("demo") / "findings.md").write_text("# findings\n")
    assert _close_or_keep(world, ask=lambda q: "", interactive=True) is False
    assert not world.root.exists()
    assert "--keep DIR" in capsys.readouterr().err
