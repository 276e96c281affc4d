"""`gpudeck server list|launch|stop|status|logs|adopt|flags|diff`."""
from __future__ import annotations

import argparse
import json
import sys
import time

from ..fmt import UNKNOWN
from .kit import CLIError, emit_json, load_profile, run_async


def register(sub) -> None:
    p = sub.add_parser("server", help="launch configs, detached servers, logs, clean kill")
    ps = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def common(parser: argparse.ArgumentParser, json_flag: bool = True) -> None:
        parser.add_argument("--profile", "-p", dest="server_profile")
        if json_flag:
            parser.add_argument("--json", action="store_true")

    ls = ps.add_parser("list", help="configs, their flags and warnings, and what is running")
    common(ls)
    ls.set_defaults(func=lambda a: run_async(_list(a)))

    launch = ps.add_parser("launch", help="launch a config detached on the host")
    launch.add_argument("config")
    launch.add_argument("--wait", action="store_true", help="follow until ready or crashed")
    launch.add_argument("--timeout", type=float, default=900.0, help="with --wait: give up after S seconds")
    launch.add_argument("--force", action="store_true", help="launch even if the port is taken")
    common(launch)
    launch.set_defaults(func=lambda a: run_async(_launch(a)))

    stop = ps.add_parser("stop", help="SIGTERM the server's process group, SIGKILL after the grace period")
    stop.add_argument("target", nargs="?", help="config name or launch id (default: the only live one)")
    stop.add_argument("--grace", type=float, help="seconds before SIGKILL (default: profile, 30)")
    stop.add_argument("--kill-escaped", action="store_true",
                      help="also SIGKILL the server's processes that left its group and outlived the stop")
    common(stop)
    stop.set_defaults(func=lambda a: run_async(_stop(a)))

    status = ps.add_parser("status", help="every launch gpudeck knows of, refreshed")
    common(status)
    status.set_defaults(func=lambda a: run_async(_status(a)))

    logs = ps.add_parser("logs", help="print (or follow) a server's log")
    logs.add_argument("target", nargs="?")
    logs.add_argument("-f", "--follow", action="store_true")
    logs.add_argument("-n", "--lines", type=int, default=50)
    logs.add_argument("--rank", type=int, help="a Slurm job's rank: that rank's own log")
    common(logs)
    logs.set_defaults(func=lambda a: run_async(_logs(a)))

    adopt = ps.add_parser("adopt", help="take over a server gpudeck did not launch")
    adopt.add_argument("pid", type=int)
    common(adopt)
    adopt.set_defaults(func=lambda a: run_async(_adopt(a)))

    flags = ps.add_parser("flags", help="the effective flags a config's script passes")
    flags.add_argument("config")
    common(flags)
    flags.set_defaults(func=lambda a: run_async(_flags(a)))

    diff = ps.add_parser("diff", help="flags that differ between two configs")
    diff.add_argument("a")
    diff.add_argument("b")
    common(diff)
    diff.set_defaults(func=lambda a: run_async(_diff(a)))


def _session(args):
    from ..session import HostSession

    profile = load_profile(getattr(args, "server_profile", None) or getattr(args, "profile", None))
    return HostSession.open(profile, readonly=bool(getattr(args, "readonly", False)))


async def _with_session(args, body):
    from ..hosts import HostError

    session = _session(args)
    try:
        return await body(session)
    except HostError as exc:
        raise CLIError(str(exc)) from None
    finally:
        await session.host.close()


async def _list(args) -> int:
    from ..servers import configs as cfgs
    from ..servers import lifecycle, procs
    from ..store import launches as records

    async def body(session):
        await lifecycle.reattach(session)
        found = await cfgs.discover(session)
        latest = records.latest_per_config(session.name)
        running = await procs.inference_processes(session.host)
        managed = {r.pgid for r in records.load_all(session.name) if r.live}
        unmanaged = [p for p in running if p.pgid not in managed]
        if args.json:
            emit_json({"profile": session.name,
                       "configs": [c.to_json() | {"latest": latest[c.name].to_json() if c.name in latest else None}
                                   for c in found],
                       "unmanaged": [p.to_json() for p in unmanaged]})
            return 0
        if not found:
            print(f"{session.name}: no launch configs (set [server] scripts_dir or configs in the profile)")
        for c in found:
            rec = latest.get(c.name)
            state = rec.state if rec else "never launched"
            print(f"{c.name:<32} {state:<10} {_flag_summary(c.flags)}")
            for warning in c.warnings:
                print(f"  ⚠ {warning}")
            if c.error:
                print(f"  ✖ {c.error}")
        for p in unmanaged:
            print(f"unmanaged pid {p.pid} (group {p.pgid}): {p.command[:100]}  → gpudeck server adopt {p.pid}")
        return 0

    return await _with_session(args, body)


def _flag_summary(flags: dict) -> str:
    keys = ("tp", "ep", "dp", "mem_fraction", "max_running_requests", "port")
    return " ".join(f"{k}={flags[k]}" for k in keys if flags.get(k) is not None)


async def _launch(args) -> int:
    from ..servers import configs as cfgs
    from ..servers import lifecycle

    async def body(session):
        found = await cfgs.discover(session)
        config = cfgs.find(found, args.config)
        if config is None:
            names = ", ".join(c.name for c in found) or "none"
            raise CLIError(f"no config {args.config!r} on {session.name} (configs: {names})")
        for warning in config.warnings:
            print(f"⚠ {warning}", file=sys.stderr)
        if session.profile.is_slurm:  # a job: the scheduler places it, not this host
            from . import slurm_server

            return await slurm_server.launch(session, config, args)
        warnings = await lifecycle.preflight(session, config.port)
        for w in warnings:
            print(f"⚠ {w.message}", file=sys.stderr)
        if any(w.kind == "port-in-use" for w in warnings) and not args.force:
            raise CLIError(f"port {config.port} is taken on {session.name}; stop what holds it or use --force")
        try:
            record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        except lifecycle.LaunchError as exc:
            raise CLIError(str(exc)) from None
        print(f"launched {config.name}: pgid {record.pgid}, log {record.log}", file=sys.stderr)
        if args.wait:
            record = await _wait_ready(session, record, args.timeout)
        if args.json:
            emit_json(record.to_json())
        if args.wait:  # only `ready` is success: crashed, stopped or still loading at the timeout is not
            return 0 if record.state == "ready" else 1
        return 1 if record.state == "crashed" else 0

    return await _with_session(args, body)


async def _wait_ready(session, record, timeout: float):
    import asyncio

    from ..servers.monitor import ServerMonitor

    done = asyncio.Event()

    def on_state(rec) -> None:
        if rec.state in ("ready", "crashed", "stopped"):
            done.set()

    def on_crash(doc) -> None:
        print(f"✖ crashed: {doc['class']} at line {doc['line']}: {doc['summary']}", file=sys.stderr)

    monitor = ServerMonitor(session, record, on_state=on_state, on_crash=on_crash, poll_s=0.5)
    task = asyncio.create_task(monitor.run())
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except asyncio.TimeoutError:
        print(f"not ready after {timeout:g}s (still {record.state})", file=sys.stderr)
    finally:
        if record.state == "crashed":
            await asyncio.wait_for(task, 30)
        else:
            task.cancel()
            try:
                await task
            except (asyncio.CancelledError, Exception):
                pass
    if record.state == "ready":
        print(f"● ready in {record.time_to_ready_s}s", file=sys.stderr)
    return record


def _pick(session, target: str | None, live_only: bool = True):
    from ..store import launches as records

    candidates = records.load_all(session.name)
    if live_only:
        candidates = [r for r in candidates if r.live]
    if target:
        candidates = [r for r in candidates if target in (r.id, r.config)]
    if not candidates:
        raise CLIError(f"no {'running ' if live_only else ''}server{' ' + repr(target) if target else ''} on {session.name}")
    if len(candidates) > 1 and not target and live_only:
        raise CLIError("several servers are running; name one: " + ", ".join(r.config for r in candidates))
    return candidates[0]


async def _stop(args) -> int:
    from ..servers import lifecycle

    async def body(session):
        from ..store import launches as records

        await lifecycle.reattach(session)
        escaped = [r for r in records.load_all(session.name) if r.escaped and not r.live
                   and args.target in (r.id, r.config)] if args.target and args.kill_escaped else []
        if escaped:  # a stop already ran: what is left is the processes that escaped it
            return await _kill_escaped(session, escaped[0], args.json)
        record = _pick(session, args.target)
        if session.profile.is_slurm and record.slurm:
            from . import slurm_server

            return await slurm_server.stop(session, record, args)
        try:
            result = await lifecycle.stop(session, record, args.grace,
                                          progress=lambda text: print(text, file=sys.stderr))
            if args.kill_escaped and result.survivors:
                killed = await lifecycle.kill_escaped(session, record)
                print(f"SIGKILL sent to escaped pid {' '.join(map(str, killed))}", file=sys.stderr)
                result.survivors, result.port_held = await lifecycle.survivors(session, record)
        except lifecycle.LaunchError as exc:
            raise CLIError(str(exc)) from None
        if result.gpu_warning:
            print(f"⚠ {result.gpu_warning}", file=sys.stderr)
        for survivor in result.survivors:
            print(f"⚠ {survivor.describe()}: it left the server's process group", file=sys.stderr)
        if result.port_held:
            print(f"⚠ {result.port_held}", file=sys.stderr)
        if result.survivors:
            print(f"  kill them: gpudeck server stop {record.config} --kill-escaped -p {session.name}", file=sys.stderr)
        if args.json:
            emit_json({"record": record.to_json(), **result.to_json()})
        elif result.clean:
            print(f"stopped {record.config} ({result.signal}, {result.seconds}s, exit {_exit_text(result.exit_status)})")
        else:
            left = ", ".join(f"pid {s.pid}" for s in result.survivors) or result.port_held
            print(f"NOT fully stopped {record.config} ({result.signal}, {result.seconds}s, "
                  f"exit {_exit_text(result.exit_status)}): still running: {left}")
        return 0 if result.clean else 1

    return await _with_session(args, body)


def _where(record) -> str:
    """pgid N, or for a Slurm job: job N on its nodes (and the failing rank's node, after a crash)."""
    from ..slurm.launch import job_id

    jid = job_id(record)
    if not jid:
        return f"pgid {record.pgid}"
    s = record.slurm
    nodes = ",".join(n for n in s.get("nodes") or [] if isinstance(n, str)) or "no node yet"
    rank = f" · rank {s['failed_rank']} on {s.get('failed_node')}" if isinstance(s.get("failed_rank"), int) else ""
    return f"job {jid} ({s.get('state')}) on {nodes}{rank}"


def _exit_text(code: int | None) -> str:
    return UNKNOWN if code is None else str(code)


async def _kill_escaped(session, record, as_json: bool) -> int:
    from ..servers import lifecycle

    try:
        killed = await lifecycle.kill_escaped(session, record)
    except lifecycle.LaunchError as exc:
        raise CLIError(str(exc)) from None
    left, port = await lifecycle.survivors(session, record)
    if as_json:
        emit_json({"record": record.to_json(), "killed": killed, "survivors": [s.to_json() for s in left],
                   "port_held": port})
    else:
        print(f"SIGKILL sent to {', '.join(f'pid {p}' for p in killed) or 'nothing (none left)'}")
        for survivor in left:
            print(f"⚠ {survivor.describe()}", file=sys.stderr)
    return 0 if not left else 1


async def _status(args) -> int:
    from ..runtime.settle import settle_launches
    from ..servers import lifecycle
    from ..store import launches as records

    async def body(session):
        from ..hosts import HostError

        try:  # one round trip: the states below are current only if the host answered
            reached, why = (await session.host.run(["true"], timeout=15)).ok, ""
        except HostError as exc:
            reached, why = False, str(exc)
        if reached:
            await settle_launches(session)  # a crashed launch gets its record (once, whoever sees it first)
        else:
            print(f"⚠ {session.name} is unreachable ({why or 'no answer'}): the states below are the last "
                  "known, from the launch records, and may be stale", file=sys.stderr)
        found = records.read_launches(session.name)
        all_records, unreadable = found.records, [u.line for u in found.unreadable]
        for r in all_records:
            if reached and r.escaped and not r.live:  # still running after its stop? look again
                left, _ = await lifecycle.survivors(session, r)
                if [s.pid for s in left] != r.escaped:
                    r.escaped = [s.pid for s in left]
                    records.save(session.name, r)
        for line in unreadable:
            print(f"⚠ {line}", file=sys.stderr)
        live = await _live_metrics(session, all_records) if reached else {}
        if args.json:
            emit_json({"profile": session.name, "reachable": reached,
                       "servers": [r.to_json() | ({"metrics": live[r.id]} if r.id in live else {})
                                   for r in all_records]})
            return 0 if reached else 1
        if not all_records:
            print(f"{session.name}: no servers launched by gpudeck")
        for r in all_records:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started_at))
            extra = f" exit {r.exit_status}" if r.exit_status is not None else ""
            crash = f" · {r.crash_class}" if r.crash_class else ""
            if r.escaped:
                crash += " · still running: " + ", ".join(f"pid {p}" for p in r.escaped)
            print(f"{r.config:<32} {r.shown_state:<9} started {when}{extra}{crash}  {_where(r)}  {r.log}")
            if r.id in live:
                print(f"    {_metrics_line(live[r.id])}")
        return 0 if reached else 1

    return await _with_session(args, body)


async def _live_metrics(session, all_records) -> dict[str, dict]:
    """launch id -> the server's own `/metrics` view, for every ready launch with a port
    (`{"unavailable": why}` when the page cannot be read)."""
    import asyncio

    from ..servers import live_metrics

    ready = [r for r in all_records if r.state == "ready" and r.port]

    async def one(record):
        found = await live_metrics.fetch(session.host, record.port)
        return record.id, found.to_json() if isinstance(found, live_metrics.LiveMetrics) else {"unavailable": found}

    return dict(await asyncio.gather(*(one(r) for r in ready)))


def _metrics_line(doc: dict) -> str:
    from ..fmt import number

    if "unavailable" in doc:
        return f"metrics: {doc['unavailable']}"
    kv = doc.get("kv_cache_usage")
    return (f"{doc.get('server') or 'server'} metrics: running {number(doc.get('running'), 0)} · "
            f"waiting {number(doc.get('waiting'), 0)} · KV cache {number(None if kv is None else kv * 100, 1, '%')} · "
            f"preemptions {number(doc.get('preemptions'), 0)} · TTFT mean {number(doc.get('ttft_mean_ms'), 1, ' ms')} · "
            f"ITL mean {number(doc.get('itl_mean_ms'), 1, ' ms')}")


async def _logs(args) -> int:
    from ..servers.logtail import LogTail, last_lines_argv

    if args.lines < 0:
        raise CLIError("-n/--lines takes a count of 0 or more", 2)

    async def body(session):
        record = _pick(session, args.target, live_only=False)
        if getattr(args, "rank", None) is not None:
            from ..slurm.launch import rank_log

            record.log = rank_log(record, args.rank)
            if record.log is None:
                raise CLIError(f"{record.config}: no log of rank {args.rank} (is it a Slurm job that ran srun?)")
        if not record.log:
            raise CLIError(f"{record.config}: log path unknown")
        if args.follow:
            from ..hosts import HostError
            from ..servers.logtail import end_offset, offset_of_last_lines

            try:
                if args.lines > 0:
                    start = await offset_of_last_lines(session.host, record.log, args.lines)
                else:
                    start = await end_offset(session.host, record.log)
            except HostError as exc:
                raise CLIError(f"cannot read {record.log}: {exc}") from None
            async for line in LogTail(session.host, record.log, start).lines(follow=True):
                print(json.dumps({"line": line}) if args.json else line, flush=True)
        else:
            result = await session.host.run(last_lines_argv(record.log, args.lines), timeout=30)
            if not result.ok:
                raise CLIError(result.stderr.strip() or f"cannot read {record.log}")
            if args.json:
                emit_json({"config": record.config, "log": record.log, "lines": result.stdout.splitlines()})
            else:
                sys.stdout.write(result.stdout)
        return 0

    return await _with_session(args, body)


async def _adopt(args) -> int:
    from ..servers import lifecycle

    async def body(session):
        try:
            record = await lifecycle.adopt(session, args.pid)
        except lifecycle.LaunchError as exc:
            raise CLIError(str(exc)) from None
        if args.json:
            emit_json(record.to_json())
        else:
            print(f"adopted pid {args.pid} as {record.config} (group {record.pgid}, log {record.log or 'unknown'})")
        return 0

    return await _with_session(args, body)


async def _flags(args) -> int:
    from ..servers import configs as cfgs

    async def body(session):
        config = cfgs.find(await cfgs.discover(session), args.config)
        if config is None:
            raise CLIError(f"no config {args.config!r} on {session.name}")
        if args.json:
            emit_json(config.to_json())
        else:
            for key, value in config.flags.items():
                print(f"{key:<28} {value}")
            for warning in config.warnings:
                print(f"⚠ {warning}")
        return 0

    return await _with_session(args, body)


async def _diff(args) -> int:
    from ..servers import configs as cfgs

    async def body(session):
        found = await cfgs.discover(session)
        a, b = cfgs.find(found, args.a), cfgs.find(found, args.b)
        for name, c in ((args.a, a), (args.b, b)):
            if c is None:
                raise CLIError(f"no config {name!r} on {session.name}")
        keys = list(dict.fromkeys([*a.flags, *b.flags]))
        rows = [{"flag": k, "a": a.flags.get(k), "b": b.flags.get(k)} for k in keys if a.flags.get(k) != b.flags.get(k)]
        if args.json:
            emit_json({"a": a.name, "b": b.name, "differences": rows})
        else:
            print(f"{'flag':<28} {a.name:<24} {b.name}")
            for row in rows:
                print(f"{row['flag']:<28} {str(row['a']):<24} {row['b']}")
        return 0

    return await _with_session(args, body)
