"""A launch script run as a Slurm job: submit with sbatch, follow with scontrol, stop with scancel.

The job carries the launch id (`GPUDECK_LAUNCH_ID`) and writes its batch log
to the profile's log dir and one log per srun task beside it (`ranks.py`).
The launch record keeps the job id, node list, batch (head) node and logs
in its Slurm part (`store.slurm_job.SlurmJob`), so any later console or CLI call finds the job by its id.

States map onto the launch record's: PENDING is `launching`, RUNNING is
`loading` until every rank's log says ready (and the head node's /health
answers, when the config names a port), then `ready`. A job that ended is
`stopped` or `crashed` by `ending.job_end`; a crash names the rank and node
it happened on.
"""
from __future__ import annotations

import asyncio
import json
import time
from dataclasses import replace
from typing import Any

from ..hosts import HostError, LocalHost
from ..store import crashes, launches
from ..servers.launching import LaunchError, StopResult, absolute, job_id, safe_stem, DEFAULT_LOG_DIR
from ..store.launches import LaunchRecord
from ..store.slurm_job import SlurmJob
from ..servers.triage import TriageResult, classify_text
from ..servers.engine_death import death_line
from ..servers.triage.process import ProcessEvidence, judge, signal_status
from ..servers import launch_state
from ..servers.launch_state import CrashFound, Ended, Ready, Requeued, Started, StartFailed, StopAsked, StopSeenElsewhere
from ..session import HostSession
from . import directives, ownership, unanswered
from .accounting import accounted_end
from .ending import JobEnd, job_end
from .fields import null, parse_record
from .jobs import JOB_BYTES, SHORT_BYTES, JobInfo, cancel, parse_sbatch, show_job
from .ranks import RankLog, failure_class, list_rank_logs, rank_pattern, read_rank, srun_failures
from .run import SlurmError, slurm

BATCH_TAIL = 2_000_000
KILL_WAIT_S = 60.0   # from the SIGKILL to reporting the job still running
_SCHEDULER = {"timeout", "node-fail", "out-of-memory", "preempted", "cancelled"}


async def submit(session: HostSession, config: str, script: str, flags: dict | None = None,
                 port: int | None = None) -> LaunchRecord:
    """sbatch the script; returns the saved record (`launching` while the job is pending)."""
    if session.readonly:
        raise LaunchError("read-only console: launching is disabled")
    host, profile = session.host, session.profile
    log_dir = (await absolute(host, profile.server.log_dir or DEFAULT_LOG_DIR)).rstrip("/")
    if any(ch in log_dir for ch in "%,\n"):
        raise LaunchError(f"log dir {log_dir!r}: Slurm reads '%' and ',' in it as patterns; choose another")
    script = await absolute(host, script)
    read = await host.run(["sh", "-c", 'test -f "$1" || { echo "no such script: $1" >&2; exit 1; }; '
                           'mkdir -p -- "$2" || exit 1; head -c 262144 -- "$1"', "sh", script, log_dir], timeout=20)
    if not read.ok:
        raise LaunchError(read.stderr.strip() or f"cannot prepare {log_dir}")
    asked = directives.sbatch_options(read.stdout)
    try:
        user = await ownership.login_user(host)
    except SlurmError as exc:
        raise LaunchError(f"could not submit {config}: {exc}") from None

    def made(launch_id: str) -> LaunchRecord:   # the job's logs are named after the id
        record = LaunchRecord(id=launch_id, config=config, script=script, log=f"{log_dir}/{launch_id}.log",
                              exit_file=None, flags=dict(flags or {}), port=port)
        record.slurm = SlurmJob(state="SUBMITTING", log_dir=log_dir, nodes_asked=directives.nodes_asked(asked),
                                owner=ownership.owner(config, launch_id, user))
        return record
    record = launch_state.create(session.name, f"{safe_stem(config)}-{time.strftime('%Y%m%d-%H%M%S')}", made)
    launch_id, log = record.id, record.log
    argv = ["sbatch", "--parsable", f"--job-name={ownership.job_name(config)}",
            f"--comment={ownership.comment(launch_id)}", f"--output={log}",
            f"--chdir={script.rsplit('/', 1)[0] or '/'}",
            f"--export=ALL,GPUDECK_LAUNCH_ID={launch_id},SLURM_STDOUTMODE={rank_pattern(log_dir, launch_id)}"]
    if profile.slurm.partition and directives.asks_for(asked, "p", "partition") is None:
        argv.append(f"--partition={profile.slurm.partition}")
    if profile.slurm.account and directives.asks_for(asked, "A", "account") is None:
        argv.append(f"--account={profile.slurm.account}")
    try:
        result = await slurm(host, [*argv, script], timeout_s=30, max_bytes=SHORT_BYTES)
        _set(record, job_id=parse_sbatch(result.stdout))
    except SlurmError as exc:
        _set(record, state="NOT_SUBMITTED")
        launch_state.move(session.name, record, StartFailed(f"sbatch refused: {exc}"))
        raise LaunchError(f"could not submit {config}: {exc}") from None
    _set(record, state="PENDING")
    record.command = " ".join([*argv, script])
    launch_state.save(session.name, record)
    return record


def _job(record: LaunchRecord) -> SlurmJob:
    """The record's Slurm part; every record acted on here has one (`submit` made it, or
    `job_id` found a job id in it)."""
    if record.slurm is None:
        raise LaunchError(f"{record.config}: not a Slurm job's record")
    return record.slurm


def _set(record: LaunchRecord, **changes: Any) -> SlurmJob:
    """The record's Slurm part with `changes` (it is frozen: a new one replaces it)."""
    record.slurm = replace(_job(record), **changes)
    return record.slurm


async def head_address(session: HostSession, node: str) -> str | None:
    """The batch (head) node's NodeAddr: where the server's port is reached from the login node."""
    result = await slurm(session.host, ["scontrol", "show", "node", "-o", node], check=False, max_bytes=JOB_BYTES)
    for line in result.stdout.splitlines()[:4]:
        rec = parse_record(line, free_text_last="Reason")
        if rec.get("NodeName") == node:
            return null(rec.get("NodeAddr")) or node
    return None


def head_for_port(profile_name: str, port: int | None) -> str | None:
    """The head node address of the live job serving `port` on this profile, if gpudeck launched one:
    where a tunnel through the login node must lead."""
    if port is None:
        return None
    for record in launches.load_all(profile_name):
        if record.live and record.port == port and job_id(record):
            addr = head_of(record)
            if addr:
                return addr
    return None


def head_of(record: LaunchRecord) -> str | None:
    """The job's head node address as recorded, when it is one an address can be (the file is hostile)."""
    addr = record.slurm.head_addr if record.slurm is not None else None
    return addr if isinstance(addr, str) and addr and not addr.startswith("-") and len(addr) < 256 else None


def nodes_of(record: LaunchRecord) -> list[str]:
    """The nodes the job ran on, as recorded."""
    return list(record.slurm.nodes) if record.slurm is not None else []


def job_gpus(profile_name: str, config: str | None = None) -> int | None:
    """GPUs of the newest live job (of `config`, if named): the count a roofline of that server takes."""
    for record in launches.load_all(profile_name):
        if record.live and job_id(record) and (config is None or record.config == config):
            gpus = _job(record).gpus
            return gpus if gpus is not None and gpus > 0 else None
    return None


async def health_ok(session: HostSession, record: LaunchRecord) -> bool:
    """The head node's /health answers 200, reached through the login node."""
    import httpx

    addr = record.slurm.head_addr if record.slurm is not None else None
    if not record.port or not addr:
        return False
    try:
        if isinstance(session.host, LocalHost):
            where = f"{addr}:{record.port}"
        else:
            where = f"127.0.0.1:{await session.host.forward_port(record.port, addr)}"
        async with httpx.AsyncClient(timeout=2.0) as client:
            return (await client.get(f"http://{where}/health")).status_code == 200
    except (httpx.HTTPError, HostError, OSError):
        return False


async def read_ranks(session: HostSession, record: LaunchRecord) -> list[RankLog]:
    """Every rank log of the launch, triaged; none when the record names no absolute log dir."""
    log_dir = record.slurm.log_dir if record.slurm is not None else None
    if log_dir is None or not log_dir.startswith("/") or "\n" in log_dir:
        return []
    ranks = await list_rank_logs(session.host, log_dir, record.id)
    return [await read_rank(session.host, r) for r in ranks]


def rank_log(record: LaunchRecord, rank: int) -> str | None:
    """The path of one rank's log, as last listed in the record."""
    for entry in record.slurm.ranks if record.slurm is not None else ():
        if entry.get("rank") == rank and isinstance(entry.get("path"), str):
            return entry["path"]
    return None


async def _batch_text(session: HostSession, record: LaunchRecord) -> str:
    if not record.log:
        return ""
    result = await session.host.run(["tail", "-c", str(BATCH_TAIL), "--", record.log], timeout=30)
    return result.stdout if result.ok else ""


async def refresh(session: HostSession, record: LaunchRecord) -> bool:
    """Bring a live job's record up to date with Slurm and its logs; True when it changed (and was saved)."""
    if not record.live or not job_id(record):
        return False
    before = json.dumps(record.to_json(), sort_keys=True, default=str)
    job = await show_job(session.host, _job(record).job_id or "")
    why = await _not_ours(session, record, job)
    unanswered.clear(record)
    if why:
        _stop_asked_elsewhere(session, record)
        await _disowned(session, record, why)
    elif job is None:  # the controller no longer knows it (past MinJobAge): accounting may
        _stop_asked_elsewhere(session, record)
        await _ended(session, record, None, await _forgotten_end(session, record))
    else:
        _set(record, state=job.state, nodes=tuple(job.nodes), batch_host=job.batch_host, num_tasks=job.num_tasks,
             num_nodes=job.num_nodes, gpus=job.gpus)
        if job.live:
            await _running(session, record, job)
        else:
            _stop_asked_elsewhere(session, record)
            end = job_end(job.state, job.exit_status, job.exit_signal, record.kill_requested)
            if end is None:  # a live state written in another case ("running"): live, as job_end reads it
                await _running(session, record, job)
            else:
                await _ended(session, record, job, end)
    after = json.dumps(record.to_json(), sort_keys=True, default=str)
    if after != before:
        launch_state.save(session.name, record)
        return True
    return False


async def _not_ours(session: HostSession, record: LaunchRecord, job: JobInfo | None) -> str | None:
    """Why the job under the record's id is not the launch's own (`ownership`); None when it is, or
    when Slurm no longer shows a job there."""
    if job is None:
        return None
    kept = _job(record).owner is not None
    return ownership.foreign(record, job, "" if kept else await ownership.login_user(session.host))


async def _disowned(session: HostSession, record: LaunchRecord, why: str) -> None:
    """The id now names another job: this launch's own job ended before, how is unknown (accounting
    by job id would mix the two jobs up). Nothing of the other job is copied into the record."""
    _set(record, reused=why, state="UNKNOWN")   # the other job's state is not ours
    end = JobEnd("UNKNOWN", None, None, record.kill_requested, "stopped" if record.kill_requested else "unknown",
                 f"{why}: this launch's own job had ended; how is unknown")
    await _ended(session, record, None, end)


def _stop_asked_elsewhere(session: HostSession, record: LaunchRecord) -> None:
    """A stop asked for by another process (a CLI call, another console) counts too."""
    saved = launches.stop_asked_elsewhere(session.name, record)
    if saved is not None:
        launch_state.apply(record, StopSeenElsewhere(saved))


async def _forgotten_end(session: HostSession, record: LaunchRecord) -> JobEnd:
    """How a job the controller has forgotten ended: accounting's state and ExitCode where the
    cluster keeps accounting, else unknown (a stop we asked for is still a stop)."""
    kept = _job(record).owner is not None
    want = ownership.expected(record, "" if kept else await ownership.login_user(session.host))
    found = await accounted_end(session.host, _job(record).job_id or "", want["name"], want["user"])
    end = job_end(found.state, found.exit_status, found.exit_signal, record.kill_requested) if found else None
    if end is not None:
        return end
    return JobEnd("UNKNOWN", None, None, record.kill_requested, "stopped" if record.kill_requested else "unknown",
                  "Slurm no longer knows the job and its accounting gave no end; its end state is unknown")


async def _running(session: HostSession, record: LaunchRecord, job: JobInfo) -> None:
    if job.state not in ("RUNNING", "COMPLETING"):
        if record.state in ("loading", "ready") and job.restarts:  # requeued: it starts over elsewhere
            launch_state.apply(record, Requeued(job.restarts))
            _set(record, restarts=job.restarts, head_addr=None, ranks=())
        return
    if record.state == "launching":
        launch_state.apply(record, Started(f"Slurm runs job {_job(record).job_id}"))
    if job.batch_host and not _job(record).head_addr:
        _set(record, head_addr=await head_address(session, job.batch_host))
    if record.state not in ("loading", "ready"):
        return
    ranks = await read_ranks(session, record)
    _set(record, ranks=tuple(r.to_json() for r in ranks))
    if record.state == "loading" and await _all_ready(session, record, job, ranks):
        launch_state.apply(record, Ready("every rank's log says ready" + (" and /health answers" if record.port else "")))


async def _all_ready(session: HostSession, record: LaunchRecord, job: JobInfo, ranks: list[RankLog]) -> bool:
    """Every rank's log says ready (or, with no srun, the batch log does), and /health answers if a port is known."""
    if ranks:
        expected = max(job.num_tasks or 1, job.num_nodes or 1, len(ranks))
        if len(ranks) < expected or not all(r.ready for r in ranks):
            return False
    elif not classify_text(await _batch_text(session, record)).ready_seen:
        return False
    return await health_ok(session, record) if record.port else True


async def _ended(session: HostSession, record: LaunchRecord, job: JobInfo | None, end: JobEnd) -> None:
    _set(record, end=end.to_json())
    if not record.live:   # another process's stop had already ended it (StopSeenElsewhere)
        return
    died = await _engine_death(session, record, end)
    launch_state.apply(record, Ended(end.exit_status, how=f"Slurm {end.state}", scheduler_state=end.state,
                                     scheduler_class=end.cls if end.cls in _SCHEDULER else None,
                                     engine_died=died, stopped_by_us=end.stopped_by_us))
    if record.state != "crashed":
        return
    verdict, rank, node = await crash_verdict(session, record, end, died)
    _set(record, failed_rank=rank, failed_node=node)
    launch_state.apply(record, CrashFound(verdict.cls, crashes.write_crash(session.name, record, verdict).id))


async def _engine_death(session: HostSession, record: LaunchRecord, end: JobEnd) -> str | None:
    """The engine-death line of a job that exited 0 unasked (vLLM's API server outlives its engine
    and exits 0): the batch log's, else the first rank log's that shows one."""
    if end.exit_status != 0 or end.stopped_by_us:
        return None
    found = death_line(await _batch_text(session, record))
    if found is None:
        found = next((r.death for r in await read_ranks(session, record) if r.death), None)
    return found


async def crash_verdict(session: HostSession, record: LaunchRecord, end: JobEnd, died: str | None = None,
                        ) -> tuple[TriageResult, int | None, str | None]:
    """Why the job ended badly and on which rank and node. Where: srun's report of the failing
    task, else the rank whose own log shows a crash. Why: the process verdict (`judge`) over that
    rank's log and the job's facts, the same ladder a local launch's end goes through."""
    batch = await _batch_text(session, record)
    ranks = {r.rank: r for r in await read_ranks(session, record)}
    failures = srun_failures(batch)
    rank = node = what = line = None
    # The first cause, not its echo: a task killed by a signal before one that exited after
    # losing its peer; then a rank whose own log shows a crash; then srun's first report.
    by_signal = [f for f in failures if failure_class(f.what) != "exit-nonzero"]
    crashed = [r for r in ranks.values() if r.verdict and r.verdict.crashed]
    if by_signal or (failures and not crashed):
        first = (by_signal or failures)[0]
        rank = first.ranks[0] if first.ranks else None
        node, what, line = first.node, first.what, first.line
    elif crashed:
        rank, node = crashed[0].rank, crashed[0].node
        reported = [f for f in failures if rank in f.ranks]
        if reported:
            what, line = reported[0].what, reported[0].line
    if node is None and rank in ranks:
        node = ranks[rank].node
    nodes = _job(record).nodes
    if node is None and len(nodes) == 1:
        node = nodes[0]  # a one-node job: whatever failed, failed there
    rank_log = ranks.get(rank) if rank is not None else None
    log_verdict = rank_log.verdict if rank_log and rank_log.verdict else classify_text(batch)
    where = f"rank {rank} on {node}" if rank is not None else (f"node {node}" if node else "the job")
    if rank_log and rank_log.tail:
        excerpt = list(rank_log.tail)
    else:
        lines = batch.splitlines()
        excerpt = lines[max(0, (line or len(lines)) - 6):(line or len(lines)) + 2]
        if line is not None:   # srun's own report is the line to show
            log_verdict = replace(log_verdict, line=line, excerpt=excerpt)
    # one ladder (triage.process.judge), as for a local launch: the scheduler's class first, then the
    # failing task's signal as srun saw it (its exit status, 128+N), the log's root cause, the exit
    signalled = signal_status(failure_class(what)) if what else None
    facts = ProcessEvidence(exit_status=signalled if signalled is not None else end.exit_status,
                            stopped_by_operator=end.stopped_by_us, ended=True,
                            engine_died=died is not None, death_line=died,
                            scheduler_state=end.state, scheduler_class=end.cls if end.cls in _SCHEDULER else None,
                            failed_where=where)
    verdict = judge(replace(log_verdict, ready_seen=bool(ranks) and all(r.ready for r in ranks.values())
                            or log_verdict.ready_seen), facts, excerpt)
    if verdict.state != "crashed":   # the job failed (Slurm says so) though nothing names how
        verdict = replace(verdict, cls="unknown", state="crashed")
    detail = what or (verdict.summary if verdict.crashed or verdict.cls != "unknown" or died else end.summary)
    verdict.summary = f"{where}: {detail} (Slurm {end.state}, exit status {end.exit_status})"
    return verdict, rank, node


async def poll(session: HostSession, record: LaunchRecord) -> bool:
    """One look for a monitor: True when the record changed. A Slurm or host outage ends nothing:
    the job's state is unknown until Slurm answers again (`unanswered`)."""
    try:
        return await refresh(session, record)
    except (SlurmError, HostError) as exc:
        return _unanswered(session, record, exc)


def _unanswered(session: HostSession, record: LaunchRecord, exc: Exception) -> bool:
    """Note the outage on the record (saved when the note is new); a stop another process asked
    for meanwhile is kept, not overwritten by this copy."""
    if not unanswered.mark(record, str(exc)):
        return False
    stopped = launches.stop_asked_elsewhere(session.name, record)
    if stopped is not None:
        launch_state.apply(record, StopSeenElsewhere(stopped))
        if not record.live:   # that stop has already ended it
            unanswered.clear(record)
    launch_state.save(session.name, record)
    return True


async def monitor_poll(monitor) -> None:
    """A `ServerMonitor`'s poll for a job: refresh, then report the state and the crash record
    this module wrote (with the job's own verdict) through the monitor's callbacks."""
    record = monitor.record
    if not await poll(monitor.session, record):
        return
    if record.crash_record and monitor.crash_doc is None:
        from ..store.crashes import crash_of_launch

        found = crash_of_launch(monitor.session.name, record.id)
        monitor.crash_doc = found.to_doc() if found else None
        if monitor.crash_doc:
            monitor.on_crash(monitor.crash_doc)
    monitor.on_state(record)


async def reattach(session: HostSession) -> list[LaunchRecord]:
    """Refresh every live job record of the profile (what `lifecycle.reattach` does for processes).

    A job Slurm did not answer about is returned too, still live and marked unknown, so a console
    watches it and its end is seen once Slurm answers again."""
    changed = []
    for record in launches.load_all(session.name):
        if record.live and job_id(record):
            try:
                await refresh(session, record)
            except (SlurmError, HostError) as exc:
                _unanswered(session, record, exc)
            changed.append(record)
    return changed


async def stop(session: HostSession, record: LaunchRecord, grace_s: float | None = None,
               progress=None) -> StopResult:
    """`scancel --full`: SIGTERM to the batch shell and every step now; if the job has not
    ended after the grace period, SIGKILL to all of it. The job then reads CANCELLED, by us.

    Only a job proven the launch's own is signalled (`ownership`). The stop is done when Slurm
    says the job ended; a job still live KILL_WAIT_S after the SIGKILL (a scancel that did not
    take, a node that does not answer) leaves the record `stopping` and the result not clean."""
    if session.readonly:
        raise LaunchError("read-only console: stopping is disabled")
    jid = job_id(record)
    if not jid:
        raise LaunchError(f"{record.config}: no Slurm job id recorded")
    try:
        why = await _not_ours(session, record, await show_job(session.host, jid))
    except SlurmError as exc:
        raise LaunchError(f"{record.config}: {exc}") from None
    if why:
        await _disowned(session, record, why)
        launch_state.save(session.name, record)
        raise LaunchError(f"{record.config}: nothing signalled: job {jid} is not this launch's: {why}")
    say = progress or (lambda text: None)
    grace = session.profile.server.kill_grace_s if grace_s is None else grace_s
    launch_state.move(session.name, record, StopAsked("the console or the CLI (scancel)"))
    started = time.monotonic()
    result = StopResult("TERM", 0.0, None, how="scancel")
    try:
        await cancel(session.host, jid)
        say(f"scancel --full {jid}: SIGTERM to the batch shell and its steps")
        killed = False
        while True:
            job = await show_job(session.host, jid)
            if job is None or not job.live or await _not_ours(session, record, job):
                break
            elapsed = time.monotonic() - started
            if not killed and elapsed > grace:
                await cancel(session.host, jid, signal="KILL")
                result.signal, killed = "KILL", True
                say(f"job {jid} still running after {grace:g}s: SIGKILL sent")
            elif elapsed > grace + KILL_WAIT_S:
                break  # Slurm still holds it: reported below, never taken for stopped
            await asyncio.sleep(0.2)
        await refresh(session, record)
    except SlurmError as exc:
        raise LaunchError(f"{record.config}: {exc}") from None
    if record.live:  # Slurm says the job still runs (or COMPLETING on a node that does not answer)
        launch_state.apply(record, StopAsked("the console or the CLI (scancel), again"))
        launch_state.save(session.name, record)
        result.running = (f"job {jid} still {_job(record).state or 'live'} after scancel"
                          + (" and SIGKILL" if killed else ""))
    result.seconds = round(time.monotonic() - started, 2)
    result.exit_status = record.exit_status
    return result
