"""How long starting a local command holds the event loop (the console's UI runs on it).

    .venv/bin/python tests/bench/local_spawn_lag.py [--repeats 3] [--commands 40] [--rss-mb 200]

A ticker on the loop wakes every 5 ms and records how late it woke, while
`--commands` short commands run one after another, each as the GPU sampler's
process-list read does. Kinds, alternated `--repeats` times:
- gpudeck: `LocalHost.run` (the process is started in its own thread);
- peer: `asyncio.create_subprocess_exec` + `communicate`, started on the loop
  (what LocalHost did before).
The process carries `--rss-mb` of memory, about what the console holds, since
the cost of starting a process grows with the parent's size. Reported: the
loop's lateness p50 / p99 / max per kind (all repeats pooled) and the ratio
to the peer, with the load average.

Figures (2-core VM shared with other engineers' jobs, 2026-12-01, load 7.5-8.1;
3 alternated repeats x 40 commands, 200 MB resident):

    gpudeck  p50 0.2 ms  p99 2.7 ms (0.46x peer)  max  9.0 ms (0.27x peer)
    peer     p50 0.2 ms  p99 5.8 ms               max 32.9 ms

A one-off probe at load 3.7 (30 commands of `true` each way, 200 MB) saw the loop
held 137 ms by one start on the loop, and at most 4.8 ms with starts in a thread.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(Path(__file__).resolve().parent))
from _alternate import load_average, pct  # noqa: E402

from console.hosts.local import LocalHost  # noqa: E402

TICK_S = 0.005
ARGV = ["sh", "-c", "echo ok"]


async def _ticker(lateness: list[float]) -> None:
    while True:
        t = time.perf_counter()
        await asyncio.sleep(TICK_S)
        lateness.append(time.perf_counter() - t - TICK_S)


async def _peer_run() -> None:
    proc = await asyncio.create_subprocess_exec(*ARGV, stdin=asyncio.subprocess.DEVNULL,
                                                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                                                start_new_session=True)
    await proc.communicate()


async def _one(kind: str, commands: int) -> list[float]:
    lateness: list[float] = []
    ticker = asyncio.create_task(_ticker(lateness))
    host = LocalHost()
    try:
        for _ in range(commands):
            if kind == "gpudeck":
                assert (await host.run(ARGV, timeout=20)).stdout == "ok\n"
            else:
                await _peer_run()
            await asyncio.sleep(0.03)
    finally:
        ticker.cancel()
    return lateness


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--commands", type=int, default=40)
    parser.add_argument("--rss-mb", type=int, default=200)
    args = parser.parse_args()
    ballast = [os.urandom(1 << 20) for _ in range(args.rss_mb)]  # resident, as the console's heap is
    results: dict[str, list[float]] = {"gpudeck": [], "peer": []}
    for rep in range(args.repeats):
        for kind in (["gpudeck", "peer"] if rep % 2 == 0 else ["peer", "gpudeck"]):
            lateness = asyncio.run(_one(kind, args.commands))
            results[kind] += lateness
            print(f"repeat {rep + 1} {kind:8s} loop late p50 {pct(lateness, .5) * 1000:5.1f} p99 "
                  f"{pct(lateness, .99) * 1000:6.1f} max {max(lateness) * 1000:6.1f} ms · load {load_average()}",
                  flush=True)
    del ballast
    peer = results["peer"]
    print(f"\nevent-loop lateness while {args.commands} commands run, {args.repeats} alternated repeats pooled:")
    for kind, values in results.items():
        print(f"  {kind:8s} p50 {pct(values, .5) * 1000:5.1f} ms  p99 {pct(values, .99) * 1000:6.1f} ms "
              f"({pct(values, .99) / pct(peer, .99):.2f}x peer)  max {max(values) * 1000:6.1f} ms "
              f"({max(values) / max(peer):.2f}x peer)")
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
