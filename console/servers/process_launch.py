"""A launch as a detached process on its host: start it, look at it, stop it cleanly (the process backend).

The server runs under a small wrapper started with `setsid`, so it outlives
the console and the SSH connection. The wrapper starts the script in a
process group of its own (whose leader writes the group's id beside the log
once the group exists), and writes the exit status to `<log>.exit` when the
script ends. Killing the group
therefore never kills the wrapper, and the exit status is always recorded.
The server's environment carries `GPUDECK_LAUNCH_ID`, so a process that left
the group (a `setsid` inside the script) is still found after a stop.
"""
from __future__ import annotations

import asyncio
import shlex
import time
from typing import Any, Callable
from dataclasses import dataclass

from ..hosts import Host, HostError
from ..session import HostSession
from ..store import launches
from ..store.launches import LaunchRecord
from . import launch_permit, launch_state, pgid_file
from .launch_state import Ended, Started, StartFailed, StopAsked, StopRefused
from .launching import DEFAULT_LOG_DIR, LaunchError as LaunchError, StopResult, Survivor, absolute, safe_stem

# The server half (after `setsid`, in its own group, carrying the launch mark) writes its group's
# id itself, so `<exit file>.pgid` never names a group that does not exist yet: written by the
# wrapper right after the fork, a kill read from it could land before the group was made, miss,
# and leave the server to start unsupervised. It then checks the launch permit, and only then
# becomes the script (same pid: the group's leader).
SERVER_HALF = 'echo $$ > "$1.pgid" || exit 96; ' + launch_permit.SHELL_CHECK + '; shift; exec "$@"'
assert "'" not in SERVER_HALF   # it goes into the wrapper between single quotes

WRAPPER = r"""
script=$1; log=$2; exitf=$3; launch=$4
cd "$(dirname -- "$script")" || exit 97
if [ -x "$script" ]; then set -- "$script"; else set -- sh -- "$script"; fi
GPUDECK_LAUNCH_ID=$launch setsid sh -c 'SERVER_HALF' gpudeck-server "$exitf" "$@" >> "$log" 2>&1 < /dev/null &
wait $!
echo $? > "$exitf.tmp" && mv "$exitf.tmp" "$exitf"
""".replace("SERVER_HALF", SERVER_HALF)

@dataclass
class PreflightWarning:
    kind: str  # port-in-use | gpu-memory
    message: str


async def preflight_process(session: HostSession, port: int | None) -> list[PreflightWarning]:
    """A process launch's warnings: the port is taken on the host, or its GPUs already hold memory."""
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


def launch_lines(script: str, host: str, argv: list[str] | None, how: str | None = None) -> list[str]:
    """What a launch of `script` runs, as the launch confirmation names it: the script (run from
    its own folder, detached, its output to the launch's log, or submitted with sbatch on a Slurm
    profile) and the server command written in it, when the script was understood."""
    how = how or "run from its folder, detached, output to its log"   # the backend's `how`
    lines = [f"runs {script} on {host} ({how})"]
    if argv:
        lines.append("$ " + shlex.join(argv))
    return lines


async def launch_process(session: HostSession, config: str, script: str, flags: dict[str, Any] | None = None,
                         port: int | None = None) -> LaunchRecord:
    """Start `script` detached on the host; returns the saved record (state `loading`)."""
    if session.readonly:
        raise LaunchError("read-only console: launching is disabled")
    host = session.host
    log_dir = await absolute(host, session.profile.server.log_dir or DEFAULT_LOG_DIR)
    script = await absolute(host, script)
    check = await host.run(["sh", "-c", 'test -f "$1" || { echo "no such script: $1"; exit 1; }; '
                            'mkdir -p -- "$2" || exit 1', "sh", script, log_dir], timeout=20)
    if not check.ok:
        raise LaunchError((check.stdout + check.stderr).strip() or f"cannot prepare {log_dir}")

    def made(launch_id: str) -> LaunchRecord:   # the log (and its exit and pgid files) named after the id
        log = f"{log_dir.rstrip('/')}/{launch_id}.log"
        return LaunchRecord(id=launch_id, config=config, script=script, log=log, exit_file=log + ".exit",
                            flags=dict(flags or {}), port=port)
    record = launch_state.create(session.name, f"{safe_stem(config)}-{time.strftime('%Y%m%d-%H%M%S')}", made)
    log, exit_file = record.log, record.exit_file
    assert log is not None and exit_file is not None  # made() names both
    started = await host.run(
        ["sh", "-c", 'setsid sh -c "$1" gpudeck-wrapper "$2" "$3" "$4" "$5" >/dev/null 2>&1 </dev/null & echo $!',
         "sh", WRAPPER, script, log, exit_file, record.id], timeout=20)
    if not started.ok:
        launch_state.move(session.name, record, StartFailed(f"the wrapper did not start: {started.stderr.strip()}"))
        raise LaunchError(f"could not start {config}: {started.stderr.strip()}")
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        got = await host.run(pgid_file.remote_read(exit_file), timeout=10)
        group = pgid_file.parse(got.stdout) if got.ok else None
        if group is not None:
            record.pgid = record.pid = group
            break
        await asyncio.sleep(0.1)
    if record.pgid is None:
        launch_state.move(session.name, record, StartFailed("no process group reported within 10 s"))
        raise LaunchError(f"{config} started but reported no process group within 10 s")
    launch_state.move(session.name, record, Started(f"process group {record.pgid}"))
    return record


@dataclass
class ProbeState:
    alive: bool
    exit_status: int | None
    pgid: int | None = None  # the group the wrapper wrote, for a record saved before it knew one


# A launch is saved before its wrapper reports the process group; until then (or until this
# long has passed) a record without a group is being launched, not dead.
LAUNCH_GRACE_S = 15.0


async def probe(host: Host, record: LaunchRecord) -> ProbeState:
    """Is the process group alive (zombies aside), and has the wrapper written an exit status?

    A record with neither group nor pid (its launcher died before reading the group)
    gets the group from the wrapper's `<exit file>.pgid`, so a running server is
    never taken for a dead one."""
    return (await probe_all(host, [record]))[0]


_PROBE_ONE = ('st=$(cat -- "$xf" 2>/dev/null); '
              f'if [ -z "$grp$pid" ]; then grp=$(head -c {pgid_file.MAX_BYTES + 1} -- "$xf.pgid" 2>/dev/null); pid=$grp; fi; '
              'case $grp in *[!0-9]*) grp=; pid=;; esac; '
              'if [ -n "$grp" ] && group_alive "$grp"; then a=1; '
              'elif [ -n "$pid" ] && pid_alive "$pid"; then a=1; else a=0; fi; '
              'echo "$a|$(printf %s "$st" | head -c 32 | tr -d "|\\n")|$grp"')


async def probe_all(host: Host, records: list[LaunchRecord]) -> list[ProbeState]:
    """`probe` for every record in one command on the host: a look at N launches is one round trip,
    not N. An answer that is not one line per launch raises HostError (nothing is read as ended)."""
    from .signals import ALIVE_FUNCS

    if not records:
        return []
    script = ALIVE_FUNCS + ('while [ "$#" -ge 3 ]; do xf=$1; grp=$2; pid=$3; shift 3; '
                            + _PROBE_ONE + '; done')
    argv = ["sh", "-c", script, "sh"]
    for record in records:
        # an adopted server's group may hold bystanders (its shell, other jobs): its own pid decides
        group = "" if record.adopted else str(record.pgid or "")
        argv += [record.exit_file or "/nonexistent", group, str(record.pid or "")]
    result = await host.run(argv, timeout=15)
    lines = result.stdout.splitlines()
    if len(lines) != len(records) or not all(line[:2] in ("0|", "1|") for line in lines):
        raise HostError("other", f"{host.name}: the look at {len(records)} launch(es) gave {len(lines)} "
                                 f"line(s) of answer (exit {result.returncode})")
    states = []
    for record, line in zip(records, lines):
        alive, _, rest = line.strip().partition("|")
        status, _, grp = rest.partition("|")
        learned = pgid_file.parse(grp) if record.pgid is None and not record.adopted else None
        states.append(ProbeState(alive == "1", int(status) if status.strip().lstrip("-").isdigit() else None,
                                 learned))
    return states


async def await_exit_status(host: Host, record: LaunchRecord, state: ProbeState) -> ProbeState:
    """The group has ended: give the wrapper its moment to write the exit status (up to 2 s)."""
    for _ in range(20):
        if state.alive or state.exit_status is not None or record.exit_file is None:
            break
        await asyncio.sleep(0.1)
        state = await probe(host, record)
    return state


def settle(record: LaunchRecord, state: ProbeState) -> bool:
    """Move a live record to stopped/crashed if its process ended. True if it changed.

    A record that learns its group from the wrapper takes it (and leaves `launching`);
    one still without a group inside LAUNCH_GRACE_S is being launched and is left alone."""
    if not record.live:
        return False
    if state.pgid is not None:
        record.pgid = record.pid = state.pgid
        launch_state.apply(record, Started(f"the wrapper wrote process group {state.pgid}"))
        if state.alive:
            return True
    if state.alive:
        return False
    if record.state == "launching" and record.pgid is None and time.time() - record.started_at < LAUNCH_GRACE_S:
        return False
    # the process verdict's state (an engine death is read after, from the log: engine_death)
    return launch_state.apply(record, Ended(state.exit_status))


async def reattach_processes(session: HostSession) -> list[LaunchRecord]:
    """Every process launch live when last seen, its group and exit file looked at again, all of
    them in one command on the host (`probe_all`).

    A launch whose host does not answer is returned too, still live and marked unknown
    (`unreached`), so a console watches it and reads its end once the host answers again."""
    from . import unreached

    live = [record for record in launches.load_all(session.name) if record.live]
    if not live:
        return []
    try:
        if session.host.status.stale:
            raise session.host.status.down_error(session.name)
        looks = await probe_all(session.host, live)
    except HostError as exc:
        for record in live:
            unreached.note_outage(session.name, record, exc)
        return live
    changed = []
    for record, look in zip(live, looks):
        try:
            state = await await_exit_status(session.host, record, look)   # a look again only for a just-ended one
        except HostError as exc:
            unreached.note_outage(session.name, record, exc)
            changed.append(record)
            continue
        answered = unreached.clear(record)
        if settle(record, state):
            from .engine_death import recheck_clean_exit

            await recheck_clean_exit(session.host, record)  # an engine death that exited 0
            launch_state.save(session.name, record)
        elif answered:
            launch_state.save(session.name, record)
        changed.append(record)
    return changed


async def signal_group(host: Host, pgid: int, name: str, root: int | None = None,
                       own_session: bool = False) -> bool:
    """Signal a whole group only when it is provably the server's (see `signals`)."""
    from .signals import signal_group as checked

    return await checked(host, pgid, name, root, own_session)


async def stop_process(session: HostSession, record: LaunchRecord, grace_s: float | None = None,
                       progress: Callable[[str], None] | None = None) -> StopResult:
    """SIGTERM to the server, SIGKILL after the grace period, then check that nothing
    of it still runs, holds its port or holds GPU memory.

    The whole group is signalled only when it is provably the server's own; else
    the server's process tree, pid by pid (see `signals`)."""
    from .signals import any_alive, signal_server

    if session.readonly:
        raise LaunchError("read-only console: stopping is disabled")
    if not record.pgid and not record.pid:
        raise LaunchError(f"{record.config}: no process group or pid recorded")
    host = session.host
    grace = session.profile.server.kill_grace_s if grace_s is None else grace_s
    say = progress or (lambda text: None)
    launch_state.move(session.name, record, StopAsked("the console or the CLI (signals)"))
    started = time.monotonic()
    result = StopResult("TERM", 0.0, None)
    own_session = not record.adopted and record.pid == record.pgid
    sent = await signal_server(host, "TERM", record.pgid, record.pid, own_session)
    result.how, result.refused = sent.how, sent.reason
    if sent.how == "none":
        launch_state.move(session.name, record, StopRefused(sent.reason or "not signalled"))
        raise LaunchError(f"{record.config}: not signalled: {sent.reason}")
    if sent.how == "group":
        say(f"SIGTERM sent to process group {record.pgid}")
    else:
        say(f"{sent.reason}: SIGTERM sent to the server's own processes {' '.join(map(str, sent.pids))}")

    async def alive() -> ProbeState:
        state = await probe(host, record)
        if sent.how == "tree":  # the group says nothing here; the tree's pids do
            state.alive = await any_alive(host, sent.pids)
        return state

    killed_at = None
    while True:
        state = await alive()
        if not state.alive:
            break
        now = time.monotonic()
        if killed_at is None and now - started > grace:
            again = await signal_server(host, "KILL", record.pgid, record.pid, own_session)
            if again.how == "tree":  # children started since the TERM are in the tree too
                sent.pids = sorted(set(sent.pids) | set(again.pids))
            result.signal = "KILL"
            killed_at = now
            say(f"still alive after {grace:g}s: SIGKILL sent")
        elif killed_at is not None and now - killed_at > 10:
            break  # unkillable for now (a process in D state): reported below
        await asyncio.sleep(0.25)
    state = await await_exit_status(host, record, state)
    if not state.alive:
        settle(record, state)
    if record.live:   # unkillable for now (D state): stopped on our side, its survivors named below
        launch_state.apply(record, Ended(record.exit_status if record.exit_status is not None else state.exit_status,
                                         how="still alive after SIGKILL", stopped_by_us=True, still_alive=True))
    result.seconds = round(time.monotonic() - started, 2)
    result.exit_status = record.exit_status
    result.survivors, result.port_held = await survivors(session, record)
    if result.port_held and not result.survivors and record.port is not None:  # held: the record has a port
        from .procs import port_holders

        # holders we can name that carry no mark of this launch: another program took the port
        result.port_foreign = bool(await port_holders(host, record.port))
    record.escaped = [s.pid for s in result.survivors]
    launch_state.save(session.name, record)
    result.gpu_warning = await _gpu_still_held(session, record)
    return result


async def marked_pids(host: Host, launch_id: str) -> list[int]:
    """Live processes whose environment carries this launch's GPUDECK_LAUNCH_ID."""
    result = await host.run(["sh", "-c", 'grep -lzxF -- "GPUDECK_LAUNCH_ID=$1" /proc/[0-9]*/environ 2>/dev/null; '
                             'exit 0', "sh", launch_id], timeout=30)
    pids = []
    for line in result.stdout.splitlines():
        parts = line.split("/")
        if len(parts) == 4 and parts[2].isdigit():
            pids.append(int(parts[2]))
    return pids


async def survivors(session: HostSession, record: LaunchRecord) -> tuple[list[Survivor], str | None]:
    """After a stop: the server's processes still alive (found by the launch's
    environment mark or the group), and who still holds the server's port."""
    from .procs import gpu_holders, port_holders, port_in_use, processes

    host = session.host
    try:
        listing = {p.pid: p for p in await processes(host)}
        if record.adopted:  # no mark, and its group may hold bystanders: only the server's own pid
            pids = {record.pid} if record.pid and record.pid > 1 else set()
        else:  # a session gpudeck created: its group, plus whatever carries the launch's mark
            pids = set(await marked_pids(host, record.id))
            if record.pgid and record.pgid > 1:
                pids |= {p.pid for p in listing.values() if p.pgid == record.pgid}
        port = record.port
        held_port = await port_in_use(host, port) if port else None
        holders_of_port = await port_holders(host, port) if held_port and port else []
        gpu = await gpu_holders(host) or []
    except HostError:
        return [], None
    out = []
    for pid in sorted(pids):
        if pid not in listing or listing[pid].command.endswith("<defunct>"):
            continue  # gone, or a zombie: exited, only not reaped (pid 1 of a container may never)
        found = Survivor(pid, listing[pid].command)
        if pid in holders_of_port:
            found.holds.append(f"port {record.port}")
        used = [g.used_mib for g in gpu if g.pid == pid]
        if used:
            known = [u for u in used if u is not None]
            found.holds.append(f"GPU memory {sum(known)} MiB" if len(known) == len(used) else "GPU memory")
        out.append(found)
    port_note = None
    if held_port:
        who = ", ".join(f"pid {p}" for p in holders_of_port) or "holder unknown"
        port_note = f"port {record.port} is still in use after the stop ({who})"
    return out, port_note


async def kill_escaped(session: HostSession, record: LaunchRecord) -> list[int]:
    """SIGKILL what survived a stop: only processes that still carry this launch's
    mark (or are still in its group), never a pid merely remembered."""
    from .signals import send

    if session.readonly:
        raise LaunchError("read-only console: killing is disabled")
    found, _ = await survivors(session, record)
    pids = [s.pid for s in found if s.pid > 1]
    if pids:
        await send(session.host, "KILL", pids=pids)
    left, _ = await survivors(session, record)
    record.escaped = [s.pid for s in left]
    launch_state.save(session.name, record)
    return pids


async def _gpu_still_held(session: HostSession, record: LaunchRecord) -> str | None:
    from .procs import gpu_holders, processes

    holders = await gpu_holders(session.host)
    if not holders:
        return None
    group = {p.pid for p in await processes(session.host) if record.pgid and record.pgid > 1 and p.pgid == record.pgid}
    ours = [h for h in holders if h.pid in group or h.pid == record.pid]
    if ours:
        known = [h.used_mib for h in ours if h.used_mib is not None]
        held = f"{sum(known)} MiB" if len(known) == len(ours) else "GPU memory (amount N/A)"
        return f"GPU memory not released: {len(ours)} process(es) of {record.config} still hold {held}"
    return None


async def adopt(session: HostSession, pid: int) -> LaunchRecord:
    """Take over a server gpudeck did not launch: its group, command and log (from fd 1)."""
    from .procs import processes

    if pid <= 1:
        raise LaunchError(f"pid {pid} is the host's init, not a server")
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
                          exit_file=None, pid=pid, pgid=proc.pgid, adopted=True, command=proc.command)
    return launch_state.adopt(session.name, record)
