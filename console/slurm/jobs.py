"""One job as `scontrol show job -o -d` prints it; submitting with sbatch, cancelling with scancel."""
from __future__ import annotations

from dataclasses import asdict, dataclass

from ..hosts import Host
from .fields import MAX_GPUS_PER_NODE, count, exit_code, gres_gpus, null, parse_record
from .hostlist import MAX_NODES, HostlistError, expand
from .job_ids import checked
from .run import SlurmError, slurm

LIVE_STATES = frozenset({"PENDING", "CONFIGURING", "RUNNING", "COMPLETING", "SUSPENDED", "REQUEUED",
                         "REQUEUE_HOLD", "REQUEUE_FED", "RESIZING", "SIGNALING", "STAGE_OUT", "STOPPED"})


@dataclass
class JobInfo:
    job_id: str
    state: str  # RUNNING, FAILED, CANCELLED, TIMEOUT, ...
    reason: str | None
    exit_status: int | None  # the A of ExitCode=A:B
    exit_signal: int | None  # the B
    nodes: list[str]
    batch_host: str | None
    num_nodes: int | None
    num_tasks: int | None
    stdout: str | None
    name: str | None = None
    restarts: int | None = None  # times Slurm requeued it (a node failed under it, a preemption)
    gpus: int | None = None  # GPUs allocated to the whole job (what a roofline of this server counts)
    user: str | None = None  # the name in UserId=alice(1001)
    comment: str | None = None
    repeated: tuple[str, ...] = ()  # who-it-is keys printed twice: a value that forges one, never read as fact

    @property
    def live(self) -> bool:
        return self.state in LIVE_STATES

    def to_json(self) -> dict:
        return asdict(self) | {"live": self.live}


JOB_BYTES = 1024 * 1024      # one job's record; its Command, WorkDir and Comment are its long fields
SHORT_BYTES = 64 * 1024      # sbatch's and scancel's few lines
IDENTITY_KEYS = frozenset({"JobId", "JobName", "UserId", "Comment"})
MAX_COUNT = 1 << 20   # tasks, restarts: past this a number is junk, read as unknown
MAX_JOB_GPUS = MAX_GPUS_PER_NODE * MAX_NODES


def _int(value: str | None, most: int = MAX_COUNT) -> int | None:
    return count(value, most)


def _job_gpus(rec: dict[str, str]) -> int | None:
    """The job's GPU total: JOB_GRES (all nodes together), else TresPerNode x NumNodes."""
    total = gres_gpus(rec.get("JOB_GRES"), MAX_JOB_GPUS)
    if total:
        return total
    if total is None and null(rec.get("JOB_GRES")):
        return None   # a count past any real job's: unknown, not the per-node guess
    per_node = gres_gpus((rec.get("TresPerNode") or "").replace("gres:", ""))
    nodes = _int(rec.get("NumNodes"), MAX_NODES)
    if per_node and nodes:
        return per_node * nodes
    return 0 if rec.get("JobState") else None


def parse_job(text: str) -> JobInfo | None:
    """The first job in `scontrol show job -o -d` output; None if there is none."""
    for line in text.splitlines()[:64]:
        repeated: set[str] = set()
        rec = parse_record(line, repeated=repeated)
        job_id = checked(null(rec.get("JobId")))
        if not job_id:
            continue
        state = (rec.get("JobState") or "UNKNOWN").split()[0]
        status, sig = exit_code(rec.get("ExitCode"))
        try:
            nodes = expand(rec.get("NodeList", ""))
        except HostlistError:
            nodes = []
        return JobInfo(job_id=job_id, state=state, reason=null(rec.get("Reason")), exit_status=status,
                       exit_signal=sig, nodes=nodes, batch_host=null(rec.get("BatchHost")),
                       num_nodes=_int(rec.get("NumNodes"), MAX_NODES), num_tasks=_int(rec.get("NumTasks")),
                       stdout=null(rec.get("StdOut")), name=null(rec.get("JobName")),
                       restarts=_int(rec.get("Restarts")), gpus=_job_gpus(rec),
                       user=null((rec.get("UserId") or "").split("(", 1)[0]), comment=null(rec.get("Comment")),
                       repeated=tuple(sorted(repeated & IDENTITY_KEYS)))
    return None


def parse_sbatch(text: str) -> str:
    """`sbatch --parsable` prints `ID` or `ID;cluster`; anything else is an error."""
    first = text.strip().splitlines()[0] if text.strip() else ""
    job_id = checked(first.split(";")[0].strip())
    if not job_id:
        raise SlurmError(f"sbatch printed no job id: {first[:120]!r}")
    return job_id


async def show_job(host: Host, job_id: str) -> JobInfo | None:
    """The job now; None once Slurm has forgotten it (past MinJobAge) or never knew it."""
    if not checked(job_id):
        raise SlurmError(f"not a job id: {job_id[:40]!r}")
    result = await slurm(host, ["scontrol", "show", "job", "-o", "-d", job_id], check=False, max_bytes=JOB_BYTES)
    if not result.ok:
        if "Invalid job id" in result.stderr:
            return None
        raise SlurmError(f"scontrol show job {job_id}: {result.stderr.strip()[:200] or 'failed'}")
    return parse_job(result.stdout)


async def cancel(host: Host, job_id: str, signal: str | None = None) -> None:
    """`scancel --full` (the batch shell too, not only its steps); with `signal`, that signal only."""
    if not checked(job_id):
        raise SlurmError(f"not a job id: {job_id[:40]!r}")
    argv = ["scancel", "--full"]
    if signal:
        argv.append(f"--signal={signal}")
    await slurm(host, [*argv, "--", job_id], max_bytes=SHORT_BYTES)
