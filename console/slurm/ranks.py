"""The ranks of a job: one log per rank (srun's `%t`/`%N` patterns), each read for readiness
and crashes, and srun's own word on which task on which node failed.

gpudeck exports `SLURM_STDOUTMODE=<log dir>/<launch id>.rank%t.%N.log` into the
job, so every `srun` task writes its own file named by task (rank) and node.
A job without `srun` has no rank logs; its batch log is its only log.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

from ..hosts import Host
from ..servers.engine_death import death_line
from ..servers.triage import TriageResult, classify_text

MAX_RANKS = 1024
TAIL_BYTES = 2_000_000
# srun: error: n2: task 1: Segmentation fault   /   srun: error: n1: tasks 0-3: Exited with exit code 1
SRUN_FAILURE = re.compile(r"srun: error: (?P<node>[A-Za-z0-9._-]+): tasks? (?P<tasks>[0-9][0-9,\-]*): (?P<what>.+)$")


def rank_pattern(log_dir: str, launch_id: str) -> str:
    """The srun output pattern for a launch: task id and short host name in the file name."""
    return f"{log_dir.rstrip('/')}/{launch_id}.rank%t.%N.log"


def _name_re(launch_id: str) -> re.Pattern:
    return re.compile(re.escape(launch_id) + r"\.rank([0-9]{1,5})\.([A-Za-z0-9._-]{1,128})\.log$")


@dataclass
class RankLog:
    rank: int
    node: str
    path: str
    verdict: TriageResult | None = None
    tail: list[str] | None = None
    death: str | None = None   # the engine-death line of this rank's log, before any stop (engine_death)

    @property
    def ready(self) -> bool:
        return bool(self.verdict and self.verdict.ready_seen and not self.verdict.crashed)

    def to_json(self) -> dict:
        return {"rank": self.rank, "node": self.node, "path": self.path, "ready": self.ready,
                "class": self.verdict.cls if self.verdict else None,
                "state": self.verdict.state if self.verdict else None}


@dataclass
class SrunFailure:
    node: str
    ranks: list[int]
    what: str  # "Segmentation fault", "Exited with exit code 1", "Killed"
    line: int


async def list_rank_logs(host: Host, log_dir: str, launch_id: str) -> list[RankLog]:
    """The launch's rank logs on disk, by rank; names not of the launch's pattern are ignored."""
    result = await host.run(["find", "--", log_dir.rstrip("/") + "/", "-maxdepth", "1", "-type", "f",
                             "-name", f"{launch_id}.rank*.log"], timeout=20)
    pattern = _name_re(launch_id)
    logs: dict[int, RankLog] = {}
    for line in result.stdout.splitlines()[:MAX_RANKS * 2]:
        m = pattern.search(line.rsplit("/", 1)[-1])
        if m:
            rank = int(m.group(1))
            logs.setdefault(rank, RankLog(rank, m.group(2), line.strip()))
    return [logs[r] for r in sorted(logs)][:MAX_RANKS]


async def read_rank(host: Host, rank: RankLog) -> RankLog:
    """Triage one rank's log (its last TAIL_BYTES)."""
    result = await host.run(["tail", "-c", str(TAIL_BYTES), "--", rank.path], timeout=30)
    text = result.stdout if result.ok else ""
    rank.verdict = classify_text(text)
    rank.tail = text.splitlines()[-10:]
    rank.death = death_line(text)
    return rank


def srun_failures(batch_log: str) -> list[SrunFailure]:
    """srun's error lines in the batch log: which tasks on which node failed, and how."""
    out = []
    for number, line in enumerate(batch_log.splitlines(), 1):
        m = SRUN_FAILURE.search(line.strip())
        if not m:
            continue
        ranks: list[int] = []
        for part in m.group("tasks").split(","):
            lo, _, hi = part.partition("-")
            if lo.isdigit() and (not hi or hi.isdigit()) and int(hi or lo) - int(lo) < MAX_RANKS:
                ranks.extend(range(int(lo), int(hi or lo) + 1))
        out.append(SrunFailure(m.group("node"), ranks, m.group("what").strip(), number))
    return out


_SIGNAL_WORDS = {"Segmentation fault": "segfault", "Aborted": "abort", "Bus error": "bus-error",
                 "Illegal instruction": "illegal-instruction", "Floating point exception": "fpe",
                 "Killed": "process-killed"}


def failure_class(what: str) -> str:
    """srun's words for a task's end as a triage class."""
    for words, cls in _SIGNAL_WORDS.items():
        if what.startswith(words):
            return cls
    return "exit-nonzero"
