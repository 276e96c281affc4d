"""What reading a fleet from Prometheus costs gpudeck: 32 hosts x 8 GPUs at 1 Hz.

Starts 32 simulated DCGM exporters and a real Prometheus scraping them every
second, then measures the CPU time of gpudeck's own process over a window:
first the engine alone (PrometheusFleet.sample() once a second), then the
fleet view headless (sampling, sorting and redrawing once a second), and the
worst gap between two key presses answered while it refreshes.

    python tests/bench/fleet_cost.py [--hosts 32] [--gpus 8] [--seconds 30]
"""
from __future__ import annotations

import argparse
import asyncio
import resource
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.gpus.prometheus import PrometheusFleet, PromSettings  # noqa: E402
from tests.prometheus_part import Prometheus, SimExporters  # noqa: E402


def cpu_s() -> float:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime


async def engine_only(url: str, seconds: float) -> tuple[float, int, int]:
    fleet = PrometheusFleet(PromSettings(url=url))
    await fleet.sample()                       # warm: connection, targets API, imports
    start_cpu, start, n, gpus = cpu_s(), time.monotonic(), 0, 0
    async for sample in fleet.samples(1.0):
        n += 1
        gpus = sum(len(h.gpus) for h in sample.hosts)
        if time.monotonic() - start >= seconds:
            break
    wall = time.monotonic() - start
    used = cpu_s() - start_cpu
    await fleet.close()
    return used / wall * 100, n, gpus


async def with_view(url: str, seconds: float) -> tuple[float, float, float, int]:
    """CPU of the view refreshing on its own, then the slowest answer to a re-sort key while it refreshes."""
    from screens.fleet_app import FleetApp

    app = FleetApp(PrometheusFleet(PromSettings(url=url)), "bench", interval_s=1.0)
    async with app.run_test(size=(160, 45)) as pilot:
        while app.latest is None:
            await pilot.pause(0.1)
        start_cpu, start = cpu_s(), time.monotonic()
        await pilot.pause(seconds)
        idle_pct = (cpu_s() - start_cpu) / (time.monotonic() - start) * 100
        start_cpu, start = cpu_s(), time.monotonic()
        worst_ms, presses = 0.0, 0
        while time.monotonic() - start < seconds:
            t0 = time.monotonic()
            await pilot.press("o")             # re-sorts and redraws every host row
            worst_ms = max(worst_ms, (time.monotonic() - t0) * 1000)
            presses += 1
            await pilot.pause(2.0)
        keys_pct = (cpu_s() - start_cpu) / (time.monotonic() - start) * 100
    return idle_pct, keys_pct, worst_ms, presses


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=32)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--seconds", type=float, default=30.0)
    args = ap.parse_args()
    base = Path(tempfile.mkdtemp(prefix="gpudeck-fleet-bench-"))
    exporters = SimExporters.start(base / "state", args.hosts, args.gpus)
    prom = Prometheus(base / "prom", exporters.targets).start()
    try:
        prom.wait_up(args.hosts, 60)
        pct, n, gpus = asyncio.run(engine_only(prom.url, args.seconds))
        print(f"engine: {args.hosts} hosts x {args.gpus} GPUs ({gpus} GPUs read), {n} refreshes at 1 Hz: "
              f"{pct:.2f}% of one core")
        idle_pct, keys_pct, worst_ms, presses = asyncio.run(with_view(prom.url, args.seconds))
        print(f"fleet view headless, refreshing at 1 Hz: {idle_pct:.2f}% of one core")
        print(f"  with a re-sort key every 2 s: {keys_pct:.2f}% of one core; slowest of {presses} presses "
              f"answered in {worst_ms:.0f} ms")
    finally:
        prom.stop()
        exporters.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
