"""The Slurm part of a launch record: which job, where it runs, how it ended (`LaunchRecord.slurm`).

`console.slurm.launch` fills it from sbatch, scontrol and the rank logs; the record's file holds it
as a table. Read back, the table is hostile like the rest of the file: `SlurmJob.from_json` checks
each field, and a field of the wrong type reads unknown (None, or empty) instead of reaching the
code that acts on the job (a job id Slurm could not have given is no id: nothing is signalled).
Unknown keys are dropped. A record written by an older gpudeck reads the same: every key it wrote
is a field here, and `to_json` writes them back under the same names.
"""
from __future__ import annotations

from dataclasses import dataclass, fields
from typing import Any

from ..outage_note import OutageNote
from ..slurm.job_ids import checked as checked_job_id

MAX_TEXT = 4096        # a node list, a path or a reason: far below this
MAX_RANKS = 4096


@dataclass(frozen=True)
class SlurmJob:
    """What the record keeps of its job; every field is optional (a job not yet submitted has no id)."""

    job_id: str | None = None             # sbatch's answer, checked (`slurm.job_ids`)
    state: str | None = None              # Slurm's JobState as last seen (SUBMITTING before sbatch answers)
    nodes: tuple[str, ...] = ()           # the job's node names
    batch_host: str | None = None         # the node the batch script runs on
    head_addr: str | None = None          # that node's address: where the server's port is reached
    log_dir: str | None = None            # where the batch log and one log per rank are written
    nodes_asked: int | None = None        # the node count the script's #SBATCH lines ask for
    ranks: tuple[dict[str, Any], ...] = ()   # each rank's log as last read (`slurm.ranks.RankLog.to_json`)
    end: dict[str, Any] | None = None     # how the job ended (`slurm.ending.JobEnd.to_json`)
    failed_rank: int | None = None        # where a crash happened
    failed_node: str | None = None
    owner: dict[str, Any] | None = None   # the job's name, user and comment at submit (`slurm.ownership`)
    num_tasks: int | None = None
    num_nodes: int | None = None
    gpus: int | None = None
    restarts: int | None = None           # times Slurm requeued it
    reused: str | None = None             # the job id now names another job: whose
    unanswered: OutageNote | None = None  # Slurm did not answer the last look (`slurm.unanswered`)

    @classmethod
    def from_json(cls, doc: object) -> SlurmJob:
        """The job from a record's table, each field checked; anything but a table is a job with no
        id to act on (`servers.launching.job_id` then refuses it)."""
        if isinstance(doc, SlurmJob):
            return doc
        if not isinstance(doc, dict):
            return cls()
        nodes = doc.get("nodes")
        ranks = doc.get("ranks")
        return cls(
            job_id=checked_job_id(doc.get("job_id")),
            state=_text(doc.get("state")),
            nodes=tuple(n for n in nodes[:MAX_RANKS] if isinstance(n, str) and n and len(n) <= MAX_TEXT)
            if isinstance(nodes, list) else (),
            batch_host=_text(doc.get("batch_host")),
            head_addr=_text(doc.get("head_addr")),
            log_dir=_text(doc.get("log_dir")),
            nodes_asked=_whole(doc.get("nodes_asked")),
            ranks=tuple(r for r in ranks[:MAX_RANKS] if isinstance(r, dict)) if isinstance(ranks, list) else (),
            end=doc.get("end") if isinstance(doc.get("end"), dict) else None,
            failed_rank=_whole(doc.get("failed_rank")),
            failed_node=_text(doc.get("failed_node")),
            owner=doc.get("owner") if isinstance(doc.get("owner"), dict) else None,
            num_tasks=_whole(doc.get("num_tasks")),
            num_nodes=_whole(doc.get("num_nodes")),
            gpus=_whole(doc.get("gpus")),
            restarts=_whole(doc.get("restarts")),
            reused=_text(doc.get("reused")),
            unanswered=OutageNote.from_json(doc.get("unanswered")),
        )

    def to_json(self) -> dict[str, Any]:
        """The table the record's file holds: the keys a submit writes always, the others once known."""
        doc: dict[str, Any] = {}
        for f in fields(self):
            value = getattr(self, f.name)
            if value is None and f.name in _ONCE_KNOWN:
                continue
            if isinstance(value, OutageNote):
                value = value.to_json()
            elif isinstance(value, tuple):
                value = [dict(v) if isinstance(v, dict) else v for v in value]
            elif isinstance(value, dict):
                value = dict(value)
            doc[f.name] = value
        return doc


_ONCE_KNOWN = {"num_tasks", "num_nodes", "gpus", "restarts", "reused", "unanswered"}


def _text(value: object) -> str | None:
    return value if isinstance(value, str) and len(value) <= MAX_TEXT else None


def _whole(value: object) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) and abs(value) < 1 << 31 else None
