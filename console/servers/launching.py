"""What launching and stopping share, whichever way a server runs (a process group under the
launch wrapper, or a Slurm job): the operator's one-line error, the outcome of a stop, and the
host paths a launch writes to. Both `lifecycle` and `console.slurm.launch` build on this."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..hosts import Host

if TYPE_CHECKING:
    from ..store.launches import LaunchRecord

DEFAULT_LOG_DIR = "~/gpudeck-logs"


class LaunchError(Exception):
    """A launch could not start; one line for the operator."""


async def home_dir(host: Host) -> str:
    result = await host.run(["sh", "-c", 'printf %s "$HOME"'], timeout=15)
    return result.stdout.strip() or "/"


async def expand(host: Host, path: str) -> str:
    """`~` as the host understands it (argv never goes through a shell)."""
    if path == "~" or path.startswith("~/"):
        return (await home_dir(host)) + path[1:]
    return path


async def absolute(host: Host, path: str) -> str:
    """`path` with `~` expanded and made absolute against the host's home (where
    commands start), so it can never be read as a command's option."""
    path = await expand(host, path)
    if not path.startswith("/"):
        path = (await home_dir(host)).rstrip("/") + "/" + path
    return path


def safe_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "server"


@dataclass
class Survivor:
    """A process of the server still running after a stop (it left the group)."""

    pid: int
    command: str
    holds: list[str] = field(default_factory=list)  # "port 8080", "GPU memory 512 MiB"

    def to_json(self) -> dict[str, Any]:
        return {"pid": self.pid, "command": self.command, "holds": self.holds}

    def describe(self) -> str:
        held = " and ".join(self.holds) if self.holds else "nothing gpudeck can see"
        return f"pid {self.pid} `{self.command[:60]}` is still running (holds {held})"


@dataclass
class StopResult:
    signal: str  # TERM or KILL
    seconds: float
    exit_status: int | None
    gpu_warning: str | None = None
    steps: list[str] = field(default_factory=list)
    how: str = "group"  # "group": kill -SIG -PGID; "tree": the server's pids one by one
    refused: str | None = None  # why the group was not signalled as a whole
    survivors: list[Survivor] = field(default_factory=list)
    port_held: str | None = None  # "port 8080 still in use (pid 4242)" after the stop
    port_foreign: bool = False  # ...by processes known not to be the server's (another program)
    running: str | None = None  # the stop was asked and the server still runs: "job 4343 still RUNNING after ..."

    @property
    def clean(self) -> bool:
        return not self.running and not self.survivors and (not self.port_held or self.port_foreign)

    def leftovers(self) -> list[str]:
        """One line per thing of the server still there after the stop (a process that left its
        group, a port still held): what keeps the stop from being clean."""
        left = [f"{s.describe()}: it left the server's process group" for s in self.survivors]
        return ([self.running] if self.running else []) + left + ([self.port_held] if self.port_held else [])

    def to_json(self) -> dict[str, Any]:
        return {"signal": self.signal, "seconds": self.seconds, "exit_status": self.exit_status,
                "gpu_warning": self.gpu_warning, "how": self.how, "refused": self.refused,
                "survivors": [s.to_json() for s in self.survivors], "port_held": self.port_held,
                "running": self.running,
                "port_foreign": self.port_foreign,
                "clean": self.clean}


def job_id(record: LaunchRecord) -> str | None:
    """The record's Slurm job id, if it holds a well-formed one (the file is read as untrusted)."""
    from ..slurm.job_ids import checked

    return checked(record.slurm.job_id) if record.slurm is not None else None


def where(record: LaunchRecord) -> str:
    """Where a launch runs, in words: pgid N, or for a Slurm job, job N on its nodes (and the
    failing rank's node after a crash)."""
    jid = job_id(record)
    if not jid:
        from .unreached import why_unknown

        why = why_unknown(record)
        return f"pgid {record.pgid}" + (f" · {why}" if why else "")
    s = record.slurm
    assert s is not None   # job_id found its id there
    nodes = ",".join(s.nodes) or "no node yet"
    rank = f" · rank {s.failed_rank} on {s.failed_node}" if s.failed_rank is not None else ""
    from ..safe_text import clean_line
    from ..slurm.unanswered import describe

    reused = f" · {clean_line(s.reused)[:160]}" if s.reused is not None else ""
    return f"job {jid} ({s.state}) on {nodes}{rank}{reused}{describe(record)}"


def stop_line(record: LaunchRecord, result: StopResult) -> str:
    """A stop's outcome in one line: how it ended, or what is still running."""
    from ..fmt import UNKNOWN

    jid = job_id(record)
    if jid:
        end = (record.slurm.end if record.slurm is not None else None) or {}
        how = f"job {jid} {end.get('state') or UNKNOWN}, {result.signal}, {result.seconds}s"
    else:
        exit_text = UNKNOWN if result.exit_status is None else str(result.exit_status)
        how = f"{result.signal}, {result.seconds}s, exit {exit_text}"
    if result.running:
        return f"stop asked, still running: {record.config} ({how}): {result.running}"
    if result.clean:
        return f"stopped {record.config} ({how})"
    left = ", ".join(f"pid {s.pid}" for s in result.survivors) or result.port_held
    return f"NOT fully stopped {record.config} ({how}): still running: {left}"
