"""`gpudeck demo`: the console on a simulated 8-GPU host.

By default it leaves nothing behind. `--keep DIR` builds the demo in DIR and
keeps it; without it, a demo in which the operator wrote a report asks on quit
whether to keep it (in a terminal; elsewhere it says what was removed).
"""
from __future__ import annotations

import argparse
import sys


def register(sub) -> None:
    p = sub.add_parser("demo", help="open the console on a simulated 8-GPU host (no GPU needed)")
    p.add_argument("--keep", metavar="DIR",
                   help="build the demo in DIR and keep it on exit (reports written from the Tasks tab included)")
    p.add_argument("--fleet", action="store_true",
                   help="16 simulated hosts behind a real Prometheus, in the fleet view (needs `prometheus`)")
    p.set_defaults(func=_demo)


def _fleet(args: argparse.Namespace) -> int:
    """`gpudeck demo --fleet`: the fleet view over simulated DCGM exporters and a real Prometheus."""
    from pathlib import Path

    from .kit import CLIError
    from ..demo.fleet import FleetDemoError, setup
    from ..gpus.prometheus import PrometheusFleet

    print("starting 16 simulated DCGM exporters, 2 simulated servers and Prometheus…", flush=True)
    try:
        demo = setup(Path(args.keep) if args.keep else None)
    except FleetDemoError as exc:
        raise CLIError(str(exc)) from None
    import os
    import signal

    def leave(signum, frame):
        # a closed tmux pane or a kill: stop what the demo started, without unwinding the UI
        demo.close()
        os._exit(128 + signum)

    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, leave)
    try:
        from screens.fleet_app import FleetApp  # the CLI's TUI command may reach up into screens

        FleetApp(PrometheusFleet(demo.settings, simulated=True), "demo --fleet").run()
    finally:
        demo.close()
    return 0


def _demo(args: argparse.Namespace) -> int:
    if getattr(args, "fleet", False):
        return _fleet(args)
    import os
    from pathlib import Path

    from ..demo import setup

    demo = setup(Path(args.keep) if args.keep else None)
    # a closed tmux pane (SIGHUP) or a kill (SIGTERM) must clean up like `q` does
    import signal

    def leave(signum, frame):
        # the terminal is gone or we were killed: clean up and go, without unwinding the UI
        demo.stop() if args.keep else demo.close()
        os._exit(128 + signum)

    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, leave)
    try:
        from screens.app import GpudeckApp  # the CLI's TUI command may reach up into screens

        # quitting stops the demo's campaign with its world (demo.stop), so q asks first while one runs
        GpudeckApp(profile_name="demo", readonly=getattr(args, "readonly", False),
                   campaigns_end_on_quit={"demo"}).run()
    finally:
        demo.stop()
        if args.keep:
            print(f"gpudeck demo: kept in {demo.root}")
        else:
            _close_or_keep(demo)
    return 0


def _close_or_keep(demo, ask=input, interactive: bool | None = None) -> bool:
    """Remove the demo, unless the operator wrote something and says to keep it. True if kept."""
    written = demo.written()
    if not written:
        demo.close()
        return False
    interactive = sys.stdin.isatty() and sys.stdout.isatty() if interactive is None else interactive
    names = ", ".join(str(p) for p in written)
    if interactive:
        try:
            answer = ask(f"gpudeck demo: you wrote {names}. Keep the demo's files? [y/N] ")
        except EOFError:
            answer = ""
        if answer.strip().lower() in ("y", "yes"):
            print(f"gpudeck demo: kept in {demo.root} (next time: gpudeck demo --keep DIR)")
            return True
    demo.close()
    print(f"gpudeck demo: removed {demo.root}, with {names} (to keep it: gpudeck demo --keep DIR)",
          file=sys.stderr)
    return False
