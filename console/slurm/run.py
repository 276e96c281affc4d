"""One Slurm command on the login node, always under `timeout` and with a one-line error."""
from __future__ import annotations

from typing import Sequence

from ..hosts import Host, HostError, RunResult

DEFAULT_TIMEOUT_S = 15.0


class SlurmError(Exception):
    """A Slurm command failed or did not answer; the message is one line for the operator."""


async def slurm(host: Host, argv: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S,
                check: bool = True) -> RunResult:
    """Run `argv` (a Slurm client) on `host` under coreutils `timeout`: a controller that
    is down makes `sinfo` and friends hang, and no caller may hang with them."""
    wrapped = ["timeout", "-k", "2", f"{timeout_s:g}", *argv]
    try:
        result = await host.run(wrapped, timeout=timeout_s + 5)
    except HostError as exc:
        raise SlurmError(f"{argv[0]}: {exc}") from None
    if result.returncode == 124 or result.returncode == 137:
        raise SlurmError(f"{argv[0]} did not answer within {timeout_s:g} s (is slurmctld up?)")
    if result.returncode == 127:
        raise SlurmError(f"{argv[0]} not found on {host.name}: is this a Slurm login node?")
    if check and not result.ok:
        why = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise SlurmError(f"{argv[0]} exited {result.returncode}: {why[-1][:300] if why else 'no message'}")
    return result
