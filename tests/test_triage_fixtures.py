"""Triage on the project's own crash fixtures: class, decisive line, server, readiness."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.servers.triage import Triage, classify, classify_file, classify_text
from tests.cli import gpudeck

LOGS = Path(__file__).parent / "fixtures" / "logs"

EXPECTED = [
    # file, class, decisive line, server, ready_seen
    ("sglang-illegal-address-cascade.log", "cuda-illegal-address", 15, "sglang", True),
    ("sglang-kv-cache-oom-at-start.log", "oom", 7, "sglang", False),
    ("vllm-nccl-watchdog-timeout.log", "nccl", 6, "vllm", True),
    ("sglang-hang-silent.log", "healthy", 2, "sglang", True),
    ("sglang-hang-then-watchdog.log", "nccl", 4, "sglang", True),
    ("llama-server-port-in-use.log", "port-in-use", 4, "llama.cpp", False),
    ("llama-server-bad-model-path.log", "model-load", 4, "llama.cpp", False),
    ("vllm-host-oom-killer.log", "process-killed", 3, "vllm", False),
    ("vllm-plain-traceback.log", "python-exception", 5, "vllm", False),
    ("sglang-wrapped-illegal-address.log", "cuda-illegal-address", 3, "sglang", True),
    ("not-a-server-log.txt", "unknown", None, "unknown", False),
]


@pytest.mark.parametrize("name,cls,line,server,ready", EXPECTED)
def test_fixture_verdict(name, cls, line, server, ready):
    result = classify_file(LOGS / name)
    assert (result.cls, result.line, result.server, result.ready_seen) == (cls, line, server, ready)


def test_cascade_points_at_root_cause_not_last_line():
    """The scheduler death, the NCCL error and 'Killed' after it are the cascade."""
    result = classify_file(LOGS / "sglang-illegal-address-cascade.log")
    assert result.cls == "cuda-illegal-address"
    assert "illegal memory access" in result.excerpt[3]
    assert "illegal memory access" in result.summary


def test_excerpt_surrounds_the_decisive_line():
    text = (LOGS / "sglang-kv-cache-oom-at-start.log").read_text()
    lines = text.splitlines()
    result = classify_text(text)
    assert result.excerpt[3] == lines[result.line - 1]
    assert result.excerpt[:3] == lines[result.line - 4:result.line - 1]


def test_json_form_has_exactly_the_stable_keys():
    doc = classify_file(LOGS / "vllm-nccl-watchdog-timeout.log").to_json()
    assert list(doc) == ["class", "state", "line", "summary", "excerpt", "server", "ready_seen", "evidence", "sources",
                         "evidence_kinds", "confidence", "decided_by", "suspicious", "last_seen", "process_fate",
                         "printed_by"]
    assert doc["class"] == "nccl" and isinstance(doc["excerpt"], list)


def test_lines_text_and_file_entry_points_agree():
    path = LOGS / "sglang-illegal-address-cascade.log"
    text = path.read_text()
    by_file = classify_file(path).to_json()
    assert classify_text(text).to_json() == by_file
    assert classify(text.splitlines(keepends=True)).to_json() == by_file
    assert classify(text.splitlines()).to_json() == by_file


def test_incremental_feed_gives_the_verdict_as_the_log_grows():
    """A live tail: healthy while serving, crashed once the fault line arrives."""
    lines = (LOGS / "sglang-illegal-address-cascade.log").read_text().splitlines()
    live = Triage()
    for line in lines[:7]:
        live.feed(line)
    early = live.result()
    assert early.cls == "healthy" and early.ready_seen
    for line in lines[7:]:
        live.feed(line)
    late = live.result()
    assert (late.cls, late.line) == ("cuda-illegal-address", 15)
    # context after the fault line was filled in as later lines arrived
    assert len(late.excerpt) == 3 + 1 + 6


def test_incremental_feed_in_arbitrary_byte_chunks():
    text = (LOGS / "vllm-nccl-watchdog-timeout.log").read_text()
    live = Triage()
    for start in range(0, len(text), 37):  # cuts lines in the middle
        live.feed_text(text[start:start + 37])
    live.close()
    assert live.result().to_json() == classify_text(text).to_json()
    assert live.lines_seen == len(text.splitlines())


def test_cli_json_is_one_document():
    proc = gpudeck("triage", str(LOGS / "sglang-kv-cache-oom-at-start.log"), "--json")
    assert proc.returncode == 0
    doc = json.loads(proc.stdout)
    assert doc["class"] == "oom" and doc["line"] == 7


def test_cli_plain_text_names_class_and_line():
    proc = gpudeck("triage", str(LOGS / "llama-server-port-in-use.log"))
    assert proc.returncode == 0
    assert proc.stdout.splitlines()[0].startswith("port-in-use · line 4")


def test_cli_missing_file_is_one_line_exit_1(tmp_path):
    proc = gpudeck("triage", str(tmp_path / "absent.log"), "--json")
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert len(proc.stderr.strip().splitlines()) == 1 and "no such log file" in proc.stderr


def test_cli_unreadable_file_is_one_line_exit_1(tmp_path):
    proc = gpudeck("triage", str(tmp_path), "--json")
    assert proc.returncode == 1
    assert len(proc.stderr.strip().splitlines()) == 1
