"""Crash triage: read a server log, say what state it ended in, what killed it and on which line.

The rules live in `rules.toml` (patterns -> class or lifecycle sign, with
the source each signature was taken from), so a new failure signature needs
no code change. `carriers` takes off what carried the log (encodings,
prefixes, colour codes), `scan` finds the lines rules match in bounded
memory and keeps them in an `episode`, `verdict` reads the run's phases
and turns them into a state and a class, and `process` puts what is known
of the process (exit status, a requested stop, /health) above the log.
`structure` tells what a line is (a final exception, a fatal error line,
a list of causes, a death notice) and `meanings` what its message means;
`strength` gives a verdict its evidence kinds and confidence (a weak one
is `unknown` with the lines to look at); `driver` puts the kernel's word
on the GPU (NVIDIA Xid, amdgpu faults) above the log's phrase.

Two ways in:
  * `classify(lines)` / `classify_text(text)` / `classify_file(path)` for a
    finished log;
  * `Triage()` for a live one: `feed(line)` / `feed_text(chunk)` as the log
    grows, `result()` whenever the current verdict is wanted.
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable

from . import prefilter
from .carriers import MAX_LINE, clean_line, read_chunks
from .rules import (CLASSES, CRASH_CLASSES, RULES_PATH, SERVERS, STATES, Rule, RuleSet,
                    default_rules)
from .scan import EXCERPT_AFTER, EXCERPT_BEFORE, Triage
from .verdict import EXCERPT_WIDTH, TriageResult

__all__ = [
    "CLASSES", "CRASH_CLASSES", "EXCERPT_AFTER", "EXCERPT_BEFORE", "EXCERPT_WIDTH", "MAX_LINE",
    "RULES_PATH", "SERVERS", "STATES", "Rule", "RuleSet", "Triage", "TriageResult", "classify", "prefilter",
    "classify_file", "classify_text", "clean_line", "default_rules",
]


def classify(lines: Iterable[str], rules: RuleSet | None = None) -> TriageResult:
    """Verdict on a whole log given as lines."""
    triage = Triage(rules)
    triage.feed_lines(lines)
    triage.close()
    return triage.result()


def classify_text(text: str, rules: RuleSet | None = None) -> TriageResult:
    triage = Triage(rules)
    triage.feed_text(text.replace("\r\n", "\n"))
    triage.close()
    return triage.result()


def classify_file(path: str | Path, rules: RuleSet | None = None, block: int = 1 << 22) -> TriageResult:
    """Verdict on a log file, streamed in blocks: UTF-8, or UTF-16 with or
    without a BOM (undecodable bytes replaced); memory stays bounded. Only a
    regular file is read: store.files.FileRefused names anything else."""
    from ...store.files import open_regular

    triage = Triage(rules)
    with open_regular(path) as handle:   # a FIFO or a device is refused (FileRefused), never waited on
        for chunk in read_chunks(handle, block):
            triage.feed_text(chunk)
    triage.close()
    return triage.result()
