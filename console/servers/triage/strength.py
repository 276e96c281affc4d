"""How strong a log's verdict is: the kinds of evidence it rests on and a confidence.

An operator loses little with "unknown, look at these lines" and a lot with
a wrong class, so a verdict whose evidence is weak (a generic exception whose
message names no known meaning, a traceback cut off in its frames, a notice
that something died elsewhere) is given as `unknown`, with the three most
suspicious lines of the run and why each is suspicious.

Evidence kinds, strongest first:
  process    how the process ended (exit status, a requested stop, liveness)
  scheduler  what the batch scheduler recorded for the job
  driver     the kernel's word on the GPU (NVIDIA Xid, amdgpu faults)
  structure  the shape of the log: a traceback's final exception, a signal
             or shell line, the lifecycle (ready -> serving -> stopping)
  phrase     a failure phrase of the rules file
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .episode import Episode, Hit
from .structure import death_notice, enumerates_causes, exception_of

KINDS = ("process", "scheduler", "driver", "structure", "phrase")
THRESHOLD = 0.6
SUSPICIOUS = 3

# how a log verdict was reached -> (kinds, confidence)
HOW: dict[str, tuple[tuple[str, ...], float]] = {
    "cause": (("phrase",), 0.85),
    "cause-weak": (("phrase",), 0.6),
    "cause-in-exception": (("structure", "phrase"), 0.9),
    "exception-type": (("structure",), 0.85),
    "exception-meaning": (("structure",), 0.8),
    "exception-frame": (("structure",), 0.65),
    "truncated-traceback": (("structure",), 0.6),
    "cut-traceback": (("structure",), 0.45),
    "killed": (("structure", "phrase"), 0.85),
    "signal": (("structure", "phrase"), 0.85),
    "engine-dead": (("phrase",), 0.7),
    "exception": (("structure",), 0.7),
    "death-notice": (("structure",), 0.4),
    "http500-burst": (("phrase",), 0.7),
    "exit": (("phrase",), 0.5),
    "serving": (("structure",), 0.85),
    "ready": (("structure",), 0.75),
    "stopped": (("structure",), 0.9),
    "request-error": (("structure",), 0.75),
    "nothing": ((), 0.0),
}


@dataclass(frozen=True)
class Strength:
    kinds: tuple[str, ...]
    confidence: float


def of(how: str) -> Strength:
    kinds, confidence = HOW[how]
    return Strength(kinds, confidence)


def suspicious_lines(episode: Episode, limit: int = SUSPICIOUS) -> list[dict[str, Any]]:
    """The run's most suspicious lines, each with why: failure phrases first, then
    final exceptions, ERROR-level lines; a line that only lists possible causes or
    reports a death elsewhere says so."""
    seen: dict[int, tuple[float, dict[str, Any]]] = {}
    hits: list[Hit] = list(episode.first.values()) + list(episode.last.values()) + list(episode.exceptions)
    for hit in hits:
        rule = hit.rule
        if rule.kind == "server" or (rule.kind == "sign" and rule.name not in ("error", "http500", "exit")):
            continue
        text = hit.text.strip()
        if enumerates_causes(text):
            score, why = 2.0, "lists possible causes and names none of them"
        elif death_notice(text):
            score, why = 2.5, "says something died or failed elsewhere; its cause is in that process's log"
        elif rule.kind == "class" and rule.name == "python-exception":
            found = exception_of(text)
            score, why = (1.0, "a traceback begins") if rule.weak else (
                3.0, f"a traceback's final exception ({found[0] if found else 'exception'})")
        elif rule.kind == "class":
            score, why = (2.0 if rule.weak or rule.notice else 3.5), rule.summary or f"a {rule.name} signature"
        elif rule.name == "http500":
            score, why = 2.0, "a request answered with HTTP 500"
        elif rule.name == "exit":
            score, why = 2.5, "the process exited with a failure status"
        else:
            score, why = 1.5, "an ERROR-level line"
        entry = {"line": hit.line, "text": text[:400], "why": why}
        if hit.line not in seen or seen[hit.line][0] < score:
            seen[hit.line] = (score, entry)
    ranked = sorted(seen.values(), key=lambda pair: (-pair[0], -pair[1]["line"]))
    return [entry for _, entry in ranked[:limit]]
