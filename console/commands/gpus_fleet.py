"""`gpudeck gpus -p FLEET` for a Prometheus profile: one line per host, or per GPU with --all."""
from __future__ import annotations

import argparse
import json
import sys
import time

from .kit import CLIError, emit_json


async def run(profile, args: argparse.Namespace) -> int:
    from console.gpus.prometheus import PrometheusError, PrometheusFleet

    from .prom_profiles import settings_for

    try:
        fleet = PrometheusFleet(settings_for(profile), simulated=profile.ui.simulated)
    except PrometheusError as exc:
        raise CLIError(f"{profile.name}: {exc}") from None
    try:
        if args.watch:
            async for sample in fleet.samples(args.interval or 1.0):
                _show(sample, args, watching=True)
            return 0
        sample = await fleet.sample()
    finally:
        await fleet.close()
    _show(sample, args)
    if sample.error:
        raise CLIError(f"{profile.name}: {sample.error}")
    return 0


def _show(sample, args: argparse.Namespace, watching: bool = False) -> None:
    from console.gpus.fleet_table import host_lines

    now = time.time()
    if args.json:
        if watching:
            sys.stdout.write(json.dumps(sample.to_json(now=now)) + "\n")
            sys.stdout.flush()
        else:
            emit_json(sample.to_json(now=now))
        return
    if watching and sys.stdout.isatty():
        sys.stdout.write("\x1b[H\x1b[2J")
    sys.stdout.write("\n".join(host_lines(sample, now)) + "\n")
    sys.stdout.flush()
