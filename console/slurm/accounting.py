"""How a job the controller has forgotten ended, from Slurm's accounting (`sacct`).

`scontrol show job` knows a job only for MinJobAge (300 s by default) after
its end; a console that was closed longer than that used to call the end
unknown. Where the cluster keeps accounting, `sacct` still has the job's
final state and ExitCode, the same facts `scontrol` would have given. No
accounting (`accounting_storage/none`), no `sacct`, no answer in time: None,
and the end stays unknown, as before; a slow slurmdbd never holds a poll
past ACCOUNTING_TIMEOUT_S.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..hosts import Host
from .fields import exit_code, null
from .run import SlurmError, slurm

ACCOUNTING_TIMEOUT_S = 10.0
MAX_LINES = 64
FORMAT = "JobID,State,ExitCode,User,JobName"   # the name last: it may hold the separator


@dataclass(frozen=True)
class AccountedEnd:
    """A finished job as accounting recorded it: `CANCELLED by 1000` reads CANCELLED."""

    state: str
    exit_status: int | None   # the A of ExitCode=A:B
    exit_signal: int | None   # the B


def parse_sacct(text: str, job_id: str, name: str | None = None, user: str | None = None) -> AccountedEnd | None:
    """The line of `job_id` in `sacct -X -n -P -o FORMAT` output; None without one. Given a job name
    and a user, only a line of that name and user counts: accounting keeps every job an id has named,
    and after the ids came round again the first line can be another person's job."""
    for line in text.splitlines()[:MAX_LINES]:
        cells = line.strip().split("|")
        if len(cells) < 3 or cells[0] != job_id:
            continue
        if name is not None and (len(cells) < 5 or cells[3] != user or "|".join(cells[4:]) != name):
            continue
        state = (null(cells[1]) or "").split(" ")[0].upper()
        if not state.replace("_", "").isalpha():
            return None
        status, sig = exit_code(cells[2])
        return AccountedEnd(state, status, sig)
    return None


async def accounted_end(host: Host, job_id: str, name: str | None = None,
                        user: str | None = None) -> AccountedEnd | None:
    """The job's end as accounting has it (of that name and user, when given); None when there is
    no accounting or no answer in time."""
    try:
        result = await slurm(host, ["sacct", "-j", job_id, "-X", "-n", "-P", "-o", FORMAT],
                             timeout_s=ACCOUNTING_TIMEOUT_S, check=False, max_bytes=1024 * 1024)
    except SlurmError:
        return None
    return parse_sacct(result.stdout, job_id, name, user) if result.ok else None
