"""`gpudeck server list|launch|stop|status|logs|adopt|flags|diff`."""
from __future__ import annotations

import argparse
import sys
import time

from . import server_look
from .kit import CLIError, emit_json, pick_launch, run_async, with_session


def register(sub) -> None:
    p = sub.add_parser("server", help="launch configs, detached servers, logs, clean kill")
    ps = p.add_subparsers(dest="action", metavar="ACTION", required=True)

    def action(name: str, help_text: str, handler) -> argparse.ArgumentParser:
        parser = ps.add_parser(name, help=help_text)
        parser.add_argument("--profile", "-p", dest="server_profile")
        parser.add_argument("--json", action="store_true")
        parser.set_defaults(func=lambda a: run_async(handler(a)))
        return parser

    action("list", "configs, their flags and warnings, and what is running", _list)
    launch = action("launch", "launch a config detached on the host", _launch)
    launch.add_argument("config")
    launch.add_argument("--wait", action="store_true", help="follow until ready or crashed")
    launch.add_argument("--timeout", type=float, default=900.0, help="with --wait: give up after S seconds")
    launch.add_argument("--force", action="store_true", help="launch even if the port is taken")
    stop = action("stop", "SIGTERM the server's process group, SIGKILL after the grace period", _stop)
    stop.add_argument("target", nargs="?", help="config name or launch id (default: the only live one)")
    stop.add_argument("--grace", type=float, help="seconds before SIGKILL (default: profile, 30)")
    stop.add_argument("--kill-escaped", action="store_true",
                      help="also SIGKILL the server's processes that left its group and outlived the stop")
    # it settles the launches in its own look: the settle before every command would be a second one
    action("status", "every launch gpudeck knows of, refreshed", _status).set_defaults(settles_itself=True)
    logs = action("logs", "print (or follow) a server's log", server_look.logs)
    logs.add_argument("target", nargs="?")
    logs.add_argument("-f", "--follow", action="store_true")
    logs.add_argument("-n", "--lines", type=int, default=50)
    logs.add_argument("--rank", type=int, help="a Slurm job's rank: that rank's own log")
    action("adopt", "take over a server gpudeck did not launch", _adopt).add_argument("pid", type=int)
    action("flags", "the effective flags a config's script passes", server_look.flags).add_argument("config")
    diff = action("diff", "flags that differ between two configs", server_look.diff)
    diff.add_argument("a")
    diff.add_argument("b")


async def _list(args) -> int:
    from ..servers import configs as cfgs
    from ..servers import lifecycle
    from ..store import launches as records
    from ..servers.owners import unmanaged as unmanaged_now

    async def body(session):
        await lifecycle.reattach(session)
        found = await cfgs.discover(session)
        latest = records.latest_per_config(session.name)
        unmanaged, _bad = await unmanaged_now(session)
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
            state = rec.shown_state if rec else "never launched"
            print(f"{c.name:<32} {state:<10} {_flag_summary(c.flags)}")
            for warning in c.warnings:
                print(f"  ⚠ {warning}")
            if c.error:
                print(f"  ✖ {c.error}")
        for p in unmanaged:
            print(f"unmanaged pid {p.pid} (group {p.pgid}): {p.command[:100]}  → gpudeck server adopt {p.pid}")
        return 0

    return await with_session(args, body)


def _flag_summary(flags: dict) -> str:
    keys = ("tp", "ep", "dp", "mem_fraction", "max_running", "port")
    return " ".join(f"{k}={flags[k]}" for k in keys if flags.get(k) is not None)


async def _launch(args) -> int:
    from ..servers import configs as cfgs
    from ..servers import lifecycle
    from ..servers.follow import settled_line, until_settled
    from ..servers.launching import where

    async def body(session):
        found = await cfgs.discover(session)
        config = cfgs.find(found, args.config)
        if config is None:
            names = ", ".join(c.name for c in found) or "none"
            raise CLIError(f"no config {args.config!r} on {session.name} (configs: {names})")
        warnings = await lifecycle.preflight(session, config.port)  # none for a Slurm job
        for line in [*config.warnings, *(w.message for w in warnings)]:
            print(f"⚠ {line}", file=sys.stderr)
        if any(w.kind == "port-in-use" for w in warnings) and not args.force:
            raise CLIError(f"port {config.port} is taken on {session.name}; stop what holds it or use --force")
        try:
            record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        except lifecycle.LaunchError as exc:
            raise CLIError(str(exc)) from None
        print(f"launched {config.name}: {where(record)}, log {record.log}", file=sys.stderr)
        if args.wait:
            record, crash = await until_settled(session, record, args.timeout)
            print(settled_line(record, args.timeout, crash), file=sys.stderr)
        if args.json:
            emit_json(record.to_json())
        if args.wait:  # only `ready` is success: crashed, stopped or still loading at the timeout is not
            return 0 if record.state == "ready" else 1
        return 1 if record.state == "crashed" else 0

    return await with_session(args, body)


async def _stop(args) -> int:
    from ..servers import lifecycle
    from ..servers.launching import stop_line

    async def body(session):
        from ..servers.owners import escaped_after_stop

        await lifecycle.reattach(session)
        escaped = escaped_after_stop(session.name, args.target) if args.kill_escaped else None
        if escaped is not None:  # a stop already ran: what is left is the processes that escaped it
            return await _kill_escaped(session, escaped, args.json)
        record = pick_launch(session, args.target)
        try:
            result = await lifecycle.stop(session, record, args.grace,
                                          progress=lambda text: print(text, file=sys.stderr))
            if args.kill_escaped and result.survivors:
                killed = await lifecycle.kill_escaped(session, record)
                print(f"SIGKILL sent to escaped pid {' '.join(map(str, killed))}", file=sys.stderr)
                result.survivors, result.port_held = await lifecycle.survivors(session, record)
        except lifecycle.LaunchError as exc:
            raise CLIError(str(exc)) from None
        for line in ([result.gpu_warning] if result.gpu_warning else []) + result.leftovers():
            print(f"⚠ {line}", file=sys.stderr)
        if result.survivors:
            print(f"  kill them: gpudeck server stop {record.config} --kill-escaped -p {session.name}", file=sys.stderr)
        if args.json:
            emit_json({"record": record.to_json(), **result.to_json()})
        else:
            print(stop_line(record, result))
        return 0 if result.clean else 1

    return await with_session(args, body)


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
    from ..runtime.status import launch_status
    from ..servers.launching import where
    from ..servers.live_metrics import summary_line

    async def body(session):
        status = await launch_status(session)
        from ..runtime.settle import announce

        announce(session.name, status.settled)   # as the settle before any other command does
        if not status.reached:
            print(f"⚠ {session.name} is unreachable ({status.why or 'no answer'}): the states below are the last "
                  "known, from the launch records, and may be stale", file=sys.stderr)
        for line in status.unreadable:
            print(f"⚠ {line}", file=sys.stderr)
        live = status.metrics
        if args.json:
            emit_json({"profile": session.name, "reachable": status.reached,
                       "servers": [r.to_json() | ({"metrics": live[r.id]} if r.id in live else {})
                                   for r in status.launches]})
            return 0 if status.reached else 1
        if not status.launches:
            print(f"{session.name}: no servers launched by gpudeck")
        for r in status.launches:
            when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(r.started_at))
            extra = f" exit {r.exit_status}" if r.exit_status is not None else ""
            crash = f" · {r.crash_class}" if r.crash_class else ""
            if r.escaped:
                crash += " · still running: " + ", ".join(f"pid {p}" for p in r.escaped)
            print(f"{r.config:<32} {r.shown_state:<9} started {when}{extra}{crash}  {where(r)}  {r.log}")
            if r.id in live:
                print(f"    {summary_line(live[r.id])}")
        return 0 if status.reached else 1

    return await with_session(args, body)


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

    return await with_session(args, body)
