"""Launch a config detached on its host, follow its state, stop it cleanly.

The server runs under a small wrapper started with `setsid`, so it outlives
the console and the SSH connection. The wrapper starts the script in a
process group of its own, writes that group's id beside the log, and writes
the exit status to `<log>.exit` when the script ends. Killing the group
therefore never kills the wrapper, and the exit status is always recorded.
"""
from __future__ import annotations

import asyncio
import re
import time
from dataclasses import dataclass, field

from ..hosts import Host, HostError
from ..session import HostSession
from . import records
from .records import LaunchRecord

WRAPPER = r"""
script=$1; log=$2; exitf=$3
cd "$(dirname "$script")" || exit 97
if [ -x "$script" ]; then set -- "$script"; else set -- sh "$script"; fi
setsid "$@" >> "$log" 2>&1 < /dev/null &
child=$!
echo "$child" > "$exitf.pgid"
wait "$child"
echo $? > "$exitf.tmp" && mv "$exitf.tmp" "$exitf"
"""

DEFAULT_LOG_DIR = "~/gpudeck-logs"


class LaunchError(Exception):
    """A launch could not start; one line for the operator."""


@dataclass
class PreflightWarning:
    kind: str  # port-in-use | gpu-memory
    message: str


async def home_dir(host: Host) -> str:
    result = await host.run(["sh", "-c", 'printf %s "$HOME"'], timeout=15)
    return result.stdout.strip() or "/"


async def expand(host: Host, path: str) -> str:
    """`~` as the host understands it (argv never goes through a shell)."""
    if path == "~" or path.startswith("~/"):
        return (await home_dir(host)) + path[1:]
    return path


def safe_stem(name: str) -> str:
    return re.sub(r"[^A-Za-z0-9._-]+", "_", name).strip("_") or "server"


async def preflight(session: HostSession, port: int | None) -> list[PreflightWarning]:
    """Warn before a launch: the port is taken, or GPUs already hold memory."""
    from .procs import describe_holders, gpu_holders, inference_processes, port_in_use

    warnings = []
    if port:
        taken = await port_in_use(session.host, port)
        if taken:
            warnings.append(PreflightWarning("port-in-use", f"port {port} is already taken on {session.name}"))
    holders = await gpu_holders(session.host)
    if holders:
        procs = await inference_processes(session.host)
        warnings.append(PreflightWarning("gpu-memory", describe_holders(holders, procs)))
    return warnings


async def launch(session: HostSession, config: str, script: str, flags: dict | None = None,
                 port: int | None = None) -> LaunchRecord:
    """Start `script` detached; returns the saved record (state `loading`)."""
    if session.readonly:
        raise LaunchError("read-only console: launching is disabled")
    host = session.host
    log_dir = await expand(host, session.profile.server.log_dir or DEFAULT_LOG_DIR)
    script = await expand(host, script)
    stamp = time.strftime("%Y%m%d-%H%M%S")
    log = f"{log_dir.rstrip('/')}/{safe_stem(config)}-{stamp}.log"
    exit_file = log + ".exit"
    check = await host.run(["sh", "-c", 'test -f "$1" || { echo "no such script: $1"; exit 1; }; '
                            'mkdir -p "$2" || exit 1', "sh", script, log_dir], timeout=20)
    if not check.ok:
        raise LaunchError((check.stdout + check.stderr).strip() or f"cannot prepare {log_dir}")
    record = LaunchRecord(id=f"{safe_stem(config)}-{stamp}", config=config, script=script, log=log,
                          exit_file=exit_file, flags=dict(flags or {}), port=port)
    records.save(session.name, record)
    started = await host.run(
        ["sh", "-c", 'setsid sh -c "$1" gpudeck-wrapper "$2" "$3" "$4" >/dev/null 2>&1 </dev/null & echo $!',
         "sh", WRAPPER, script, log, exit_file], timeout=20)
    if not started.ok:
        record.state = "crashed"
        records.save(session.name, record)
        raise LaunchError(f"could not start {config}: {started.stderr.strip()}")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = await host.run(["cat", exit_file + ".pgid"], timeout=10)
        if got.ok and got.stdout.strip().isdigit():
            record.pgid = record.pid = int(got.stdout.strip())
            break
        await asyncio.sleep(0.1)
    if record.pgid is None:
        record.state = "crashed"
        records.save(session.name, record)
        raise LaunchError(f"{config} started but reported no process group within 10 s")
    record.state = "loading"
    records.save(session.name, record)
    return record


@dataclass
class ProbeState:
    alive: bool
    exit_status: int | None


async def probe(host: Host, record: LaunchRecord) -> ProbeState:
    """Is the process group alive, and has the wrapper written an exit status?"""
    script = ('st=$(cat "$1" 2>/dev/null); '
              'if [ -n "$2" ] && kill -0 "-$2" 2>/dev/null; then a=1; '
              'elif [ -n "$3" ] && kill -0 "$3" 2>/dev/null; then a=1; else a=0; fi; echo "$a|$st"')
    result = await host.run(["sh", "-c", script, "sh", record.exit_file or "/nonexistent",
                             str(record.pgid or ""), str(record.pid or "")], timeout=15)
    alive, _, status = result.stdout.strip().partition("|")
    return ProbeState(alive == "1", int(status) if status.strip().lstrip("-").isdigit() else None)


async def await_exit_status(host: Host, record: LaunchRecord, state: ProbeState) -> ProbeState:
    """The group has ended: give the wrapper its moment to write the exit status (up to 2 s)."""
    for _ in range(20):
        if state.alive or state.exit_status is not None or record.exit_file is None:
            break
        await asyncio.sleep(0.1)
        state = await probe(host, record)
    return state


def settle(record: LaunchRecord, state: ProbeState) -> bool:
    """Move a live record to stopped/crashed if its process ended. True if it changed."""
    if not record.live or state.alive:
        return False
    record.exit_status = state.exit_status
    record.stopped_at = record.stopped_at or time.time()
    if record.kill_requested or state.exit_status == 0:
        record.state = "stopped"
    else:
        record.state = "crashed"
    return True


async def reattach(session: HostSession) -> list[LaunchRecord]:
    """On start: refresh every record that was live when the last console closed."""
    changed = []
    for record in records.load_all(session.name):
        if record.live:
            try:
                state = await await_exit_status(session.host, record, await probe(session.host, record))
            except HostError:
                continue
            if settle(record, state):
                records.save(session.name, record)
            changed.append(record)
    return changed


async def signal_group(host: Host, pgid: int, name: str) -> bool:
    """The shell's own `kill` (dash's has no `--`; procps' reads `-PGID` as an option)."""
    result = await host.run(["sh", "-c", f'kill -{name} "-$1"', "sh", str(int(pgid))], timeout=15)
    return result.ok


@dataclass
class StopResult:
    signal: str  # TERM or KILL
    seconds: float
    exit_status: int | None
    gpu_warning: str | None = None
    steps: list[str] = field(default_factory=list)


async def stop(session: HostSession, record: LaunchRecord, grace_s: float | None = None,
               progress=None) -> StopResult:
    """SIGTERM to the group, SIGKILL after the grace period, then check GPU memory was freed."""
    if session.readonly:
        raise LaunchError("read-only console: stopping is disabled")
    if not record.pgid:
        raise LaunchError(f"{record.config}: no process group recorded")
    host = session.host
    grace = session.profile.server.kill_grace_s if grace_s is None else grace_s
    say = progress or (lambda text: None)
    record.kill_requested = True
    record.state = "stopping"
    records.save(session.name, record)
    started = time.monotonic()
    result = StopResult("TERM", 0.0, None)
    await signal_group(host, record.pgid, "TERM")
    say(f"SIGTERM sent to process group {record.pgid}")
    while True:
        state = await probe(host, record)
        if not state.alive:
            break
        if time.monotonic() - started > grace:
            await signal_group(host, record.pgid, "KILL")
            result.signal = "KILL"
            say(f"still alive after {grace:g}s: SIGKILL sent")
            await asyncio.sleep(0.5)
            state = await probe(host, record)
            break
        await asyncio.sleep(0.25)
    state = await await_exit_status(host, record, state)
    settle(record, state)
    record.state = "stopped"
    result.seconds = round(time.monotonic() - started, 2)
    result.exit_status = record.exit_status
    records.save(session.name, record)
    result.gpu_warning = await _gpu_still_held(session, record)
    return result


async def _gpu_still_held(session: HostSession, record: LaunchRecord) -> str | None:
    from .procs import gpu_holders, processes

    holders = await gpu_holders(session.host)
    if not holders:
        return None
    group = {p.pid for p in await processes(session.host) if p.pgid == record.pgid}
    ours = [h for h in holders if h.pid in group or h.pid == record.pid]
    if ours:
        known = [h.used_mib for h in ours if h.used_mib is not None]
        held = f"{sum(known)} MiB" if len(known) == len(ours) else "GPU memory (amount N/A)"
        return f"GPU memory not released: {len(ours)} process(es) of {record.config} still hold {held}"
    return None


async def adopt(session: HostSession, pid: int) -> LaunchRecord:
    """Take over a server gpudeck did not launch: its group, command and log (from fd 1)."""
    from .procs import processes

    procs = {p.pid: p for p in await processes(session.host)}
    proc = procs.get(pid)
    if proc is None:
        raise LaunchError(f"no process {pid} on {session.name}")
    log = await session.host.run(["readlink", f"/proc/{pid}/fd/1"], timeout=10)
    log_path = log.stdout.strip() if log.ok and log.stdout.strip().startswith("/") else None
    if log_path and (log_path.startswith("/dev/") or log_path.startswith("pipe:")):
        log_path = None
    name = safe_stem(proc.command.split()[0].rsplit("/", 1)[-1]) + f"-pid{pid}"
    record = LaunchRecord(id=f"adopted-{pid}-{int(time.time())}", config=name, script=None, log=log_path,
                          exit_file=None, pid=pid, pgid=proc.pgid, state="loading", adopted=True,
                          command=proc.command)
    records.save(session.name, record)
    return record
