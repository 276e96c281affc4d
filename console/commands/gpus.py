"""`gpudeck gpus`: live GPU state of a host, or `--parse FILE` for saved nvidia-smi output."""
from __future__ import annotations

import argparse

from .kit import CLIError, emit_json, load_profile, run_async


def register(sub) -> None:
    p = sub.add_parser("gpus", help="GPU state of a host (or --parse saved nvidia-smi output)")
    p.add_argument("--profile", "-p", dest="gpus_profile", metavar="P",
                   help="profile to sample (default: the last used)")
    p.add_argument("--parse", metavar="FILE", help="parse saved nvidia-smi output instead of sampling ('-' = stdin)")
    p.add_argument("--json", action="store_true", help="one JSON document (with --watch: one per line)")
    p.add_argument("--watch", action="store_true", help="keep sampling until interrupted")
    p.add_argument("--interval", type=float, metavar="S", help="seconds between samples with --watch")
    p.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    try:
        if args.parse:
            return _parse(args)
        profile = load_profile(args.gpus_profile or getattr(args, "profile", None))
        if profile.is_prometheus:
            from . import gpus_fleet

            return run_async(gpus_fleet.run(profile, args))
        if profile.is_slurm:
            from . import slurm_gpus

            return run_async(slurm_gpus.run(profile, args))
        if args.watch:
            return run_async(_watch(profile, args))
        return run_async(_once(profile, args))
    except BrokenPipeError:
        # The reader went away (`| head`): stop quietly, as other CLI tools do.
        import os
        import sys

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0


def _parse(args: argparse.Namespace) -> int:
    import sys
    import time

    from console.gpus import parse_text
    from console.gpus.parse_input import BinaryInput, read_saved_output
    from console.gpus.text import table

    if args.watch:
        raise CLIError("--watch does not go with --parse")
    try:
        if args.parse == "-":
            text, dropped = read_saved_output(sys.stdin.buffer)
        else:
            with open(args.parse, "rb") as f:
                text, dropped = read_saved_output(f)
    except BinaryInput as exc:
        raise CLIError(f"{args.parse}: unparsed: {exc}") from None
    except OSError as exc:
        raise CLIError(f"cannot read {args.parse}: {exc.strerror or exc}") from None
    snap = parse_text(text)
    if dropped:
        snap.message += f"; {dropped} lines in the middle of the input were not read"
    if args.json:
        emit_json(snap.to_json())
    elif snap.state != "unparsed":
        print(table(snap, time.time()))
    if snap.state == "unparsed":
        raise CLIError(f"{args.parse}: unparsed: {snap.message}")
    return 0


async def _once(profile, args: argparse.Namespace) -> int:
    import time

    from console.gpus import sample_once
    from console.gpus.text import table
    from console.hosts import host_for

    host = host_for(profile, measure_latency=False)
    try:
        snap = await sample_once(host, smi_command=profile.gpu.smi_command or None,
                                 simulated=profile.ui.simulated)
        if args.json:
            await _tie_to_launches(profile, host, snap)
    finally:
        await host.close()
    snap.host = profile.name
    if args.json:
        emit_json(snap.to_json(now=time.time()))
    elif snap.state == "ok":  # a failed sample has no table: the error line below says it, once
        print(table(snap, time.time()))
    if snap.state != "ok" or snap.sample_stale:
        why = snap.stale_reason if snap.state == "ok" else snap.message
        raise CLIError(f"{profile.name}: {snap.state}: {why}")
    return 0


async def _tie_to_launches(profile, host, snap) -> None:
    """Each GPU process in a live gpudeck launch's process group gets that launch's config and id
    (the rule the GPUs tab uses: console/servers/owners.py); the others keep them unknown."""
    if not snap.processes:
        return
    from console.servers.owners import process_launches
    from console.session import HostSession

    by_pid = await process_launches(HostSession(profile=profile, host=host))
    for proc in snap.processes:
        record = by_pid.get(proc.pid) if isinstance(proc.pid, int) else None
        if record is not None:
            proc.config, proc.launch_id = record.config, record.id


async def _watch(profile, args: argparse.Namespace) -> int:
    import contextlib
    import json
    import sys
    import time

    from console.gpus import sampler_for
    from console.gpus.text import table

    sampler = sampler_for(profile, interval_s=args.interval)
    clear = sys.stdout.isatty() and not args.json
    try:
        # closed explicitly: its nvidia-smi stream child ends with this loop, not when the generator is collected
        async with contextlib.aclosing(sampler.snapshots()) as snapshots:
            async for snap in snapshots:
                now = time.time()
                if args.json:
                    await _tie_to_launches(profile, sampler.host, snap)
                    sys.stdout.write(json.dumps(snap.to_json(now=now)) + "\n")
                else:
                    if clear:  # our own clear-screen, past the CLI's text boundary on purpose
                        getattr(sys.stdout, "raw", sys.stdout).write("\x1b[H\x1b[2J")
                    sys.stdout.write(table(snap, now) + "\n\n")
                sys.stdout.flush()
    finally:
        await sampler.host.close()
    return 0
