"""`gpudeck demo`: the console on a simulated 8-GPU host; leaves nothing behind."""
from __future__ import annotations

import argparse


def register(sub) -> None:
    p = sub.add_parser("demo", help="open the console on a simulated 8-GPU host (no GPU needed)")
    p.add_argument("--keep", metavar="DIR", help="build the demo in DIR and keep it (for inspection)")
    p.add_argument("--fleet", action="store_true",
                   help="16 simulated hosts behind a real Prometheus, in the fleet view (needs `prometheus`)")
    p.set_defaults(func=_demo)


def _fleet(args: argparse.Namespace) -> int:
    """`gpudeck demo --fleet`: the fleet view over simulated DCGM exporters and a real Prometheus."""
    from pathlib import Path

    from ..clikit import CLIError
    from ..demo_fleet import FleetDemoError, setup
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
        if not args.keep:
            demo.close()
        os._exit(128 + signum)

    for sig in (signal.SIGHUP, signal.SIGTERM):
        signal.signal(sig, leave)
    try:
        from screens.app import GpudeckApp  # the CLI's TUI command may reach up into screens

        GpudeckApp(profile_name="demo", readonly=getattr(args, "readonly", False)).run()
    finally:
        if not args.keep:
            demo.close()
    return 0
