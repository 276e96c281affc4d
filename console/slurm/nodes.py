"""A partition as a fleet: each node's state (with the reason), GPUs allocated and free, its jobs.

Read from three commands on the login node: `sinfo` (which nodes the partition
has), `scontrol show node -o -d` (state, reason, gres and gres used) and
`squeue` (which running job sits on which node). The parsers take the text
those commands print, so they are tested on outputs saved from a real cluster.
"""
from __future__ import annotations

from dataclasses import asdict, dataclass, field

from ..hosts import Host
from .fields import gres_gpus, null, parse_record
from .hostlist import HostlistError, expand
from .run import SlurmError, slurm

# squeue's format for running jobs: id | state | node list | name | user
SQUEUE_FORMAT = "%i|%T|%N|%j|%u"
MAX_NODES = 4096
MAX_PLACEMENTS = 64 * MAX_NODES   # running jobs on nodes, all nodes together


@dataclass
class SlurmNode:
    name: str
    state: str  # idle | mixed | allocated | drain | down | completing | ... (lower case)
    raw_state: str  # Slurm's own, e.g. MIXED+DRAIN
    reason: str | None = None
    gpus_total: int | None = None
    gpus_used: int | None = None
    addr: str | None = None
    partitions: list[str] = field(default_factory=list)
    jobs: list[str] = field(default_factory=list)  # running job ids on this node
    live: dict | None = None  # DCGM readings joined by host name (console.slurm.live); None: none known

    @property
    def gpus_free(self) -> int | None:
        """GPUs a new job could get here: none on a drained or down node."""
        if self.state in ("drain", "down"):
            return 0
        if self.gpus_total is None or self.gpus_used is None:
            return None
        return max(self.gpus_total - self.gpus_used, 0)

    def to_json(self) -> dict:
        return asdict(self) | {"gpus_free": self.gpus_free}


@dataclass
class Partition:
    name: str | None
    nodes: list[SlurmNode]
    problems: list[str] = field(default_factory=list)

    @property
    def gpus_total(self) -> int | None:
        counts = [n.gpus_total for n in self.nodes]
        known = [c for c in counts if c is not None]
        return sum(known) if counts and len(known) == len(counts) else None

    @property
    def gpus_used(self) -> int | None:
        counts = [n.gpus_used for n in self.nodes]
        known = [c for c in counts if c is not None]
        return sum(known) if counts and len(known) == len(counts) else None

    def to_json(self) -> dict:
        return {"partition": self.name, "nodes": [n.to_json() for n in self.nodes],
                "gpus_total": self.gpus_total, "gpus_used": self.gpus_used, "problems": list(self.problems)}


def node_state(raw: str) -> str:
    """`MIXED+DRAIN` -> drain, `IDLE*`/`DOWN+NOT_RESPONDING` -> down, `ALLOCATED` -> allocated."""
    words = raw.upper().rstrip("*~#!%$@^-").split("+")
    base, flags = words[0], set(words[1:])
    if raw.endswith("*") or base == "DOWN" or "NOT_RESPONDING" in flags or base == "FUTURE":
        return "down"
    if "DRAIN" in flags or base in ("DRAIN", "DRAINED", "DRAINING"):
        return "drain"
    return base.lower() or "unknown"


def parse_nodes(text: str) -> list[SlurmNode]:
    """`scontrol show node -o -d` output (one node per line) -> nodes; lines without NodeName skipped."""
    out = []
    for line in text.splitlines()[:MAX_NODES]:
        rec = parse_record(line, free_text_last="Reason")
        name = null(rec.get("NodeName"))
        if not name:
            continue
        raw = rec.get("State", "UNKNOWN")
        out.append(SlurmNode(
            name=name, state=node_state(raw), raw_state=raw, reason=null(rec.get("Reason")),
            gpus_total=gres_gpus(rec.get("Gres")) if "Gres" in rec else None,
            gpus_used=gres_gpus(rec.get("GresUsed")) if "GresUsed" in rec else None,
            addr=null(rec.get("NodeAddr")),
            partitions=[p for p in (null(rec.get("Partitions")) or "").split(",") if p]))
    return out


def parse_squeue(text: str) -> dict[str, list[str]]:
    """squeue lines in SQUEUE_FORMAT -> {node: [job ids running or completing there]}.

    Host lists are short to print and long to expand (`n[1-4096]` is 4096 names): past
    MAX_PLACEMENTS job-on-node pairs in all the answer is refused (20,000 such lines took 24 s)."""
    on_node: dict[str, list[str]] = {}
    placed = 0
    for line in text.splitlines()[:100_000]:
        parts = line.split("|")
        if len(parts) < 3 or not parts[0].strip():
            continue
        job, state, nodelist = parts[0].strip(), parts[1].strip(), parts[2].strip()
        if state not in ("RUNNING", "COMPLETING", "CONFIGURING", "SUSPENDED"):
            continue
        try:
            names = expand(nodelist)
        except HostlistError:
            continue
        placed += len(names)
        if placed > MAX_PLACEMENTS:
            raise SlurmError(f"squeue placed more than {MAX_PLACEMENTS} jobs on nodes; the answer is not read")
        for node in names:
            on_node.setdefault(node, []).append(job)
    return on_node


def parse_sinfo_nodes(text: str) -> list[str]:
    """`sinfo -h -N -o %N` -> node names, once each, in order."""
    return list(dict.fromkeys(line.strip() for line in text.splitlines()[:MAX_NODES] if line.strip()))


def join(nodes: list[SlurmNode], names: list[str] | None, jobs: dict[str, list[str]]) -> list[SlurmNode]:
    """The nodes named (all when None), each with its running jobs."""
    wanted = set(names) if names is not None else None
    out = []
    for node in nodes:
        if wanted is not None and node.name not in wanted:
            continue
        node.jobs = list(jobs.get(node.name, []))
        out.append(node)
    return out


async def read_partition(host: Host, partition: str | None, timeout_s: float = 15.0) -> Partition:
    """The partition's nodes as they are now; `SlurmError` when Slurm does not answer."""
    part = ["-p", partition] if partition else []
    listed = await slurm(host, ["sinfo", "-h", "-N", *part, "-o", "%N"], timeout_s, max_bytes=4 * 1024 * 1024)
    names = parse_sinfo_nodes(listed.stdout)
    if partition and not names:
        raise SlurmError(f"partition {partition!r} has no nodes (or does not exist)")
    shown = await slurm(host, ["scontrol", "show", "node", "-o", "-d"], timeout_s)
    queue = await slurm(host, ["squeue", "-h", *part, "-t", "RUNNING,COMPLETING", "-o", SQUEUE_FORMAT], timeout_s)
    nodes = join(parse_nodes(shown.stdout), names, parse_squeue(queue.stdout))
    problems = [f"node {n} is in sinfo but not in scontrol" for n in names if n not in {x.name for x in nodes}]
    return Partition(partition, nodes, problems)
