"""`gpudeck campaign run|resume|list|show|stop`: unattended runs over launch configs and flag grids."""
from __future__ import annotations

import argparse
import sys

from .kit import CLIError, emit_json, load_profile


def register(sub) -> None:
    p = sub.add_parser("campaign", help="run launch configs one after another: launch, sweep, stop, compare")
    ps = p.add_subparsers(dest="campaign_action", metavar="ACTION", required=True)

    run = ps.add_parser("run", help="start a campaign from a TOML file (detached; survives the console)")
    run.add_argument("file", nargs="?", help="the campaign file (default: the profile's campaign.toml)")
    _common(run)
    run.add_argument("--foreground", action="store_true", help="run in this process, printing each step")
    run.add_argument("--max-cells", type=int, metavar="N",
                     help="allow a campaign of up to N cells (default 1000, or the file's [policy] max_cells)")
    run.add_argument("--hosts", metavar="A,B,C",
                     help="spread the cells over these profiles, one cell at a time on each")
    run.set_defaults(func=_run)

    resume = ps.add_parser("resume", help="continue a campaign: finished cells are kept, an interrupted one redone")
    resume.add_argument("id")
    _common(resume)
    resume.add_argument("--foreground", action="store_true")
    resume.set_defaults(func=_resume)

    ls = ps.add_parser("list", help="the profile's campaigns")
    _common(ls)
    ls.set_defaults(func=_list)

    show = ps.add_parser("show", help="one campaign: its cells and the result table")
    show.add_argument("id")
    _common(show)
    show.set_defaults(func=_show)

    stop = ps.add_parser("stop", help="stop a running campaign (its server is stopped, its state kept)")
    stop.add_argument("id")
    _common(stop)
    stop.set_defaults(func=_stop)

    drive = ps.add_parser("_drive")  # the detached driver's own entry: not for people, so not listed
    drive.add_argument("id")
    _common(drive)
    drive.set_defaults(func=_drive)
    ps._choices_actions = [a for a in ps._choices_actions if a.dest != "_drive"]


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--profile", "-p", dest="campaign_profile", metavar="P", help="profile (default: the last used)")
    p.add_argument("--json", action="store_true")


def _profile(args: argparse.Namespace):
    profile = load_profile(args.campaign_profile or getattr(args, "profile", None))
    if profile.is_local or profile.transport == "ssh":
        return profile
    raise CLIError(f"profile {profile.name} has no shell to launch servers on")


def _load(profile, campaign_id: str):
    from ..store import campaigns as st

    try:
        return st.load(profile.name, campaign_id)
    except (LookupError, ValueError) as exc:
        raise CLIError(str(exc)) from None


def _run(args: argparse.Namespace) -> int:
    from ..campaign.control import ControlError, create
    from ..campaign.spec import CampaignError

    profile = _profile(args)
    try:
        state = create(profile.name, args.file, max_cells=args.max_cells, hosts=args.hosts)
    except (CampaignError, ValueError) as exc:
        raise CLIError(str(exc), 2) from None
    except (ControlError, OSError) as exc:     # the host is driven by another campaign; nothing was created
        raise CLIError(str(exc)) from None
    return _start(args, profile, state, new=True)


def _resume(args: argparse.Namespace) -> int:
    from ..campaign.control import ControlError, prepare_resume

    profile = _profile(args)
    try:
        state = prepare_resume(profile.name, args.id)
    except (ControlError, LookupError, ValueError) as exc:
        raise CLIError(str(exc)) from None
    return _start(args, profile, state)


def _start(args, profile, state, new: bool = False) -> int:
    from ..campaign.control import ControlError, spawn, start

    try:
        if args.foreground:
            return _drive_now(profile, state, echo=True, as_json=args.json)
        pid = start(state) if new else spawn(state)
    except (ControlError, OSError) as exc:
        raise CLIError(str(exc)) from None
    if args.json:
        emit_json({"id": state.id, "profile": profile.name, "driver_pid": pid, "cells": len(state.cells),
                   "log": str(state.dir / "driver.log")})
    else:
        print(f"campaign {state.id} started on {profile.name}: {len(state.cells)} cell(s), driver pid {pid}")
        print(f"  follow: gpudeck campaign show {state.id} -p {profile.name}   (log: {state.dir / 'driver.log'})")
    return 0


def _drive(args: argparse.Namespace) -> int:
    from ..campaign.control import wait_for_handover

    wait_for_handover()   # the spawner saves who this driver is first: one writer at a time
    profile = _profile(args)
    return _drive_now(profile, _load(profile, args.id), echo=True, as_json=False)


def _drive_now(profile, state, echo: bool, as_json: bool) -> int:
    import asyncio
    import os
    import signal

    from ..campaign import owner
    from ..campaign.compare import table_lines
    from ..campaign.lock import LockHeld
    from ..campaign.parallel import runner_for
    from ..campaign.spec import CampaignError

    recorded = state.driver_pid
    owner.claim_driver(state)
    say = (lambda text: print(text, file=sys.stderr if as_json else sys.stdout, flush=True)) if echo else None
    try:
        runner = runner_for(state, profile, say=say)
    except CampaignError as exc:
        raise CLIError(str(exc)) from None

    async def main():
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGHUP):
            loop.add_signal_handler(sig, runner.request_stop)
        return await runner.run()

    try:
        final = asyncio.run(main())
    except LockHeld as exc:
        if recorded in (None, os.getpid()):
            owner.refuse(state, str(exc))
        raise CLIError(str(exc)) from None
    from ..campaign.compare import compare
    from ..roofline.from_profile import roofline_for

    roof, note = roofline_for(profile)
    if as_json:
        emit_json(_shown(final) | {"comparison": compare(final, roof, note, detail=True).to_json()})
    else:
        print("\n".join(table_lines(final, roof, note)))
    return 0 if final.status == "finished" else 1


def _shown(state) -> dict:
    """The state as printed: without the driver's token (it proves the driver; it is nobody's to copy)."""
    doc = state.to_json()
    doc.pop("driver_token", None)
    return doc


def _list(args: argparse.Namespace) -> int:
    from ..campaign import owner
    from ..campaign.compare import compare
    from ..store import campaigns as st

    profile = _profile(args)
    read = st.read_campaigns(profile.name)
    found, bad = read.records, [u.line for u in read.unreadable]
    readings = [(s, owner.read(s)) for s in found]
    if args.json:
        compared = [(s, seen, compare(s)) for s, seen in readings]
        emit_json({"campaigns": [{"id": s.id, "status": s.status, "cells": len(s.cells),
                                  "done": s.finished_cells,
                                  "running": seen.driving, "driver": seen.driver,
                                  "driver_gone": seen.driver == owner.GONE,
                                  "progress": seen.progress.to_json(),
                                  "winner": comp.winner, "leader": comp.leader, "tie": comp.tie,
                                  "verdict": "".join(comp.verdict())} for s, seen, comp in compared],
                   "errors": bad})
        return 0
    for s, seen in readings:
        live = f" ({seen.driver_text(mark=False)})" if seen.driver_text() else ""
        label, names, _ = compare(s).verdict()
        print(f"{s.id}  {s.status}{live}  {seen.progress.text()}" + (f"  {label}{names}" if names else ""))
    for line in bad:
        print(f"! {line}")
    if not found and not bad:
        print(f"no campaigns in profile {profile.name}")
    return 0


def _show(args: argparse.Namespace) -> int:
    from ..campaign import owner
    from ..campaign.compare import compare, table_lines
    from ..roofline.from_profile import roofline_for

    profile = _profile(args)
    state = _load(profile, args.id)
    seen = owner.read(state)
    roof, note = roofline_for(profile)
    if args.json:
        from ..campaign.pareto import frontier, gpus_of

        comp = compare(state, roof, note, detail=True)
        slo = (state.spec.get("sweep") or {}).get("slo") or {}
        emit_json(_shown(state) | seen.to_json() | {"comparison": comp.to_json(),
                                                     "frontier": frontier(comp, gpus_of(roof), slo).to_json()})
        return 0
    print("\n".join(table_lines(state, roof, note, reading=seen)))
    return 0


def _stop(args: argparse.Namespace) -> int:
    from ..campaign.control import ControlError, stop

    profile = _profile(args)
    try:
        pid = stop(profile.name, args.id)
    except (ControlError, LookupError, ValueError) as exc:
        raise CLIError(str(exc)) from None
    print(f"asked campaign {args.id} (pid {pid}) to stop; it stops its server and saves")
    return 0
