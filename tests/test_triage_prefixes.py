"""The same crash, carried by docker, journald, Kubernetes, Ray, a markdown
paste, or with colour codes, gets the same verdict and the same line."""
from __future__ import annotations

from pathlib import Path

import pytest

from console.servers.triage import classify, clean_line

LOGS = Path(__file__).parent / "fixtures" / "logs"

CARRIERS = {
    "plain": lambda i, line: line,
    "docker": lambda i, line: f"2025-06-02T14:02:{i % 60:02d}.123456789Z {line}",
    "kubernetes-cri": lambda i, line: f"2025-06-02T14:02:{i % 60:02d}.21748708+08:00 stdout F {line}",
    "journald": lambda i, line: f"Jun 02 14:02:{i % 60:02d} gpu-node-7 python3[4242]: {line}",
    "ray": lambda i, line: f"(SGLangWorker pid=859188, ip=10.0.0.12) {line}",
    "markdown": lambda i, line: f"> {line}",
    "buildkite-quote": lambda i, line: f">   | [2025-06-02T14:02:{i % 60:02d}Z] {line}",
    "ansi": lambda i, line: f"\x1b[31m{line}\x1b[0m",
    "caret-ansi": lambda i, line: f"^[[2m^[[33m{line}^[[0m",
    "syslog-octal": lambda i, line: f"#033[2m{line}#033[0m",
    "crlf": lambda i, line: line + "\r",
}


@pytest.mark.parametrize("carrier", sorted(CARRIERS))
@pytest.mark.parametrize("name,cls,line", [
    ("sglang-illegal-address-cascade.log", "cuda-illegal-address", 15),
    ("vllm-host-oom-killer.log", "process-killed", 3),
    ("vllm-nccl-watchdog-timeout.log", "nccl", 6),
])
def test_carrier_prefix_does_not_change_verdict(carrier, name, cls, line):
    wrap = CARRIERS[carrier]
    lines = [wrap(i, text) for i, text in enumerate((LOGS / name).read_text().splitlines())]
    result = classify(lines)
    assert (result.cls, result.line) == (cls, line)


def test_bare_killed_line_needs_to_stand_alone():
    assert classify(["INFO loading", "the worker was not Killed"]).cls != "process-killed"
    assert classify(["INFO loading", "> Killed"]).cls == "process-killed"


def test_clean_line_removes_prefix_and_colour():
    raw = "2025-07-25T07:53:08.217+08:00 stdout F \x1b[31m[2025-07-25 07:53:08 TP2] boom\x1b[0m"
    assert clean_line(raw) == "[2025-07-25 07:53:08 TP2] boom"
