"""One Slurm command on the login node, bounded in time and in output, with a one-line error.

Bounded in output on the host itself: the command's stdout goes through
`head -c`, so a runaway answer (a 200 MB `scontrol` listing took 600 MB here
and its parse tens of seconds) never crosses the link nor fills this
process; past the cap the command fails with one line instead. POSIX sh has
no pipefail, so the command's own exit status comes back on a third
descriptor (`_CAPPED`).
"""
from __future__ import annotations

from typing import Sequence

from ..hosts import Host, HostError, RunResult

DEFAULT_TIMEOUT_S = 15.0
# `scontrol show node -o -d` of 4096 nodes is about 8 MB; the worst 16 MiB parse in under 2 s
DEFAULT_MAX_BYTES = 16 * 1024 * 1024
MAX_STDERR = 64 * 1024

# $1 stdout cap (+1, to see it was passed), $2 stderr cap, $3 seconds, then the command.
_CAPPED = ('n=$1 e=$2 t=$3; shift 3; exec 4>&1 5>&2; '
           'rc=$( { { { timeout -k 2 "$t" "$@" 3>&- 4>&- 5>&-; echo "$?" >&3; } | head -c "$n" >&4; } 2>&1 '
           '| head -c "$e" >&5; } 3>&1 ); exit "${rc:-1}"')


class SlurmError(Exception):
    """A Slurm command failed or did not answer; the message is one line for the operator."""


async def slurm(host: Host, argv: Sequence[str], timeout_s: float = DEFAULT_TIMEOUT_S,
                check: bool = True, max_bytes: int = DEFAULT_MAX_BYTES) -> RunResult:
    """Run `argv` (a Slurm client) on `host` under coreutils `timeout`: a controller that
    is down makes `sinfo` and friends hang, and no caller may hang with them. More than
    `max_bytes` of output is refused (SlurmError), whatever the exit status."""
    wrapped = ["sh", "-c", _CAPPED, "sh", str(max_bytes + 1), str(MAX_STDERR), f"{timeout_s:g}", *argv]
    try:
        result = await host.run(wrapped, timeout=timeout_s + 5)
    except HostError as exc:
        raise SlurmError(f"{argv[0]}: {exc}") from None
    # decoding maps one invalid byte to U+FFFD (3 bytes again): the length is never under the bytes read
    if len(result.stdout) > max_bytes // 4 and len(result.stdout.encode("utf-8")) > max_bytes:
        raise SlurmError(f"{argv[0]} printed more than {_size(max_bytes)}; its answer was cut and is not read")
    if result.returncode == 124 or result.returncode == 137:
        raise SlurmError(f"{argv[0]} did not answer within {timeout_s:g} s (is slurmctld up?)")
    if result.returncode == 127:
        raise SlurmError(f"{argv[0]} not found on {host.name}: is this a Slurm login node?")
    if check and not result.ok:
        why = (result.stderr.strip() or result.stdout.strip()).splitlines()
        raise SlurmError(f"{argv[0]} exited {result.returncode}: {why[-1][:300] if why else 'no message'}")
    return result


def _size(n: int) -> str:
    return f"{n // (1024 * 1024)} MiB" if n >= 1024 * 1024 else f"{n // 1024} KiB" if n >= 1024 else f"{n} bytes"
