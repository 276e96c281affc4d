"""Whether the job Slurm shows under a record's job id is still that launch's job.

Job ids come round again (a controller whose state was reset starts over at
1; a busy cluster wraps at MaxJobId), so a record's id can come to name
somebody else's job. Read as ours, that job was shown as our server and a
stop sent it `scancel` and SIGKILL. Before a job is read as ours or
signalled, three things must match what gpudeck put into it at submission:

  JobName   gpudeck-<config>
  UserId    the user gpudeck submits as on the login node
  Comment   gpudeck-launch:<launch id>   (sbatch --comment)

A record written before the comment was set (no `owner` in its Slurm part)
is checked on the name and the user alone: that is all such a job carries,
and the user check keeps another person's job out. A job whose record names
one of these keys twice (a job name holding ` UserId=root(0)`) is never ours.
"""
from __future__ import annotations

import weakref

from ..hosts import Host, HostError
from ..safe_text import clean_line
from ..servers.launching import safe_stem
from .jobs import JobInfo
from .run import SlurmError

COMMENT_PREFIX = "gpudeck-launch:"
REUSED = "job id reused by another job"
_users: "weakref.WeakKeyDictionary[Host, str]" = weakref.WeakKeyDictionary()


def job_name(config: str) -> str:
    return f"gpudeck-{safe_stem(config)}"


def comment(launch_id: str) -> str:
    return f"{COMMENT_PREFIX}{launch_id}"


async def login_user(host: Host) -> str:
    """The user gpudeck runs Slurm commands as on the login node (asked once per host)."""
    found = _users.get(host)
    if found:
        return found
    try:
        result = await host.run(["id", "-un"], timeout=20)
    except HostError as exc:
        raise SlurmError(f"id -un: {exc}") from None
    name = result.stdout.strip()
    if not result.ok or not name or len(name) > 256 or any(ch.isspace() for ch in name):
        raise SlurmError(f"cannot tell the login user (id -un exited {result.returncode})")
    _users[host] = name
    return name


def owner(config: str, launch_id: str, user: str) -> dict:
    """What a new record keeps of its job's identity."""
    return {"name": job_name(config), "user": user, "comment": comment(launch_id)}


def expected(record, user: str) -> dict:
    """The record's own `owner`, fields checked (the file is read as untrusted); a record from before
    the comment gets the name its config gave and the login user, and no comment to match."""
    kept = record.slurm.owner if record.slurm is not None else None
    if isinstance(kept, dict):
        return {k: kept.get(k) if isinstance(kept.get(k), str) else "" for k in ("name", "user", "comment")}
    return {"name": job_name(record.config), "user": user, "comment": None}


def foreign(record, job: JobInfo, user: str) -> str | None:
    """None when `job` is the record's own; else, in one line, whose job it is now."""
    want = expected(record, user)
    mismatched = bool(job.repeated) or job.name != want["name"] or job.user != want["user"]
    if want["comment"] is not None and job.comment != want["comment"]:
        mismatched = True
    if not mismatched:
        return None
    return f"{REUSED} (JobName={clean_line(job.name or '')[:80]}, UserId={clean_line(job.user or '')[:40]})"
