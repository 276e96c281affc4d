"""`gpudeck gpus -p SLURM-PROFILE`: the partition's nodes, their state, GPUs and jobs."""
from __future__ import annotations

import argparse

from .kit import CLIError, emit_json


def table(part) -> str:
    """One row per node: state (and why, for drain/down), GPUs used/total/free, running jobs."""
    from ..fmt import UNKNOWN

    def num(value) -> str:
        return UNKNOWN if value is None else str(value)

    live = any(n.live for n in part.nodes)
    head = f"{'NODE':<16} {'STATE':<10} {'GPUS USED':>9} {'FREE':>5} {'JOBS':<20} " + \
        (f"{'UTIL':>6} {'MEM USED':>17} " if live else "") + "REASON"
    rows = [f"partition {part.name or '(default)'}: {len(part.nodes)} node(s), "
            f"GPUs {num(part.gpus_used)}/{num(part.gpus_total)} allocated", head]
    for n in part.nodes:
        used = f"{num(n.gpus_used)}/{num(n.gpus_total)}"
        jobs = ",".join(n.jobs) or "-"
        reason = n.reason if n.reason and n.state in ("drain", "down") else ""
        readings = ""
        if live:
            r = n.live or {}
            util = UNKNOWN if r.get("util_pct") is None else f"{r['util_pct']:.0f}%"
            mem = (UNKNOWN if r.get("memory_used_mib") is None or r.get("memory_total_mib") is None
                   else f"{r['memory_used_mib'] / 1024:.0f}/{r['memory_total_mib'] / 1024:.0f} GiB")
            readings = f"{util:>6} {mem:>17} "
        rows.append(f"{n.name:<16} {n.state:<10} {used:>9} {num(n.gpus_free):>5} {jobs:<20} {readings}{reason}".rstrip())
    rows.extend(f"⚠ {p}" for p in part.problems)
    return "\n".join(rows)


async def run(profile, args: argparse.Namespace) -> int:
    if args.watch:
        return await _watch(profile, args)
    part = await _read(profile)
    if args.json:
        emit_json({"profile": profile.name, "kind": "slurm", **part.to_json()})
    else:
        print(table(part))
    return 0


async def _read(profile):
    from ..hosts import host_for
    from ..slurm.nodes import read_partition
    from ..slurm.run import SlurmError

    host = host_for(profile)
    try:
        part = await read_partition(host, profile.slurm.partition)
    except SlurmError as exc:
        raise CLIError(f"{profile.name}: {exc}") from None
    finally:
        await host.close()
    if profile.prometheus.url:  # DCGM through Prometheus for the same nodes: join by host name
        await _join_dcgm(profile, part)
    return part


async def _watch(profile, args: argparse.Namespace) -> int:
    """Read the partition again every interval (default 5 s): one JSON document per line with --json."""
    import asyncio
    import json
    import sys
    import time

    interval = args.interval if args.interval and args.interval > 0 else 5.0
    while True:
        try:
            part = await _read(profile)
            doc = {"profile": profile.name, "kind": "slurm", "taken_at": time.time(), **part.to_json()}
            text = table(part)
        except CLIError as exc:  # Slurm down for a moment: say so, keep watching
            doc, text = {"profile": profile.name, "kind": "slurm", "error": str(exc)}, f"⚠ {exc}"
        if args.json:
            sys.stdout.write(json.dumps(doc) + "\n")
        else:
            if sys.stdout.isatty():
                getattr(sys.stdout, "raw", sys.stdout).write("\x1b[H\x1b[2J")
            sys.stdout.write(text + "\n\n")
        sys.stdout.flush()
        await asyncio.sleep(interval)

async def _join_dcgm(profile, part) -> None:
    from ..gpus.prometheus import PrometheusError, PrometheusFleet
    from ..slurm.live import join
    from .prom_profiles import settings_for

    try:
        fleet = PrometheusFleet(settings_for(profile), simulated=profile.ui.simulated)
        try:
            sample = await fleet.sample()
        finally:
            await fleet.close()
    except PrometheusError as exc:
        part.problems.append(f"DCGM readings unavailable: {exc}")
        return
    if sample.error:
        part.problems.append(f"DCGM readings unavailable: {sample.error}")
        return
    missing = join(part, sample.hosts)
    if missing:
        part.problems.append(f"no DCGM readings for {', '.join(missing)} (no host of that name in Prometheus)")
