"""What launching and stopping share, whichever way a server runs (a process group under the
launch wrapper, or a Slurm job): the operator's one-line error, the outcome of a stop, and the
host paths a launch writes to. Both `lifecycle` and `console.slurm.launch` build on this."""
from __future__ import annotations

import re
from dataclasses import dataclass, field

from ..hosts import Host

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

    def to_json(self) -> dict:
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

    @property
    def clean(self) -> bool:
        return not self.survivors and (not self.port_held or self.port_foreign)

    def to_json(self) -> dict:
        return {"signal": self.signal, "seconds": self.seconds, "exit_status": self.exit_status,
                "gpu_warning": self.gpu_warning, "how": self.how, "refused": self.refused,
                "survivors": [s.to_json() for s in self.survivors], "port_held": self.port_held,
                "port_foreign": self.port_foreign,
                "clean": self.clean}
