"""The Server tab's log view under a burst of 10,000 lines/s.

    .venv/bin/python tests/bench/log_burst.py [--seconds 5] [--rate 10000]

Feeds the LogView the way the server monitor does (a batch every 0.1 s) in
a headless 160x45 app, and prints: time spent handling each batch, the
event loop's lag (how late a 50 ms timer fires) while the burst runs, and
the lines kept in memory (the window) at the end.
"""
from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from textual.app import App, ComposeResult

from widgets.log_view import LogView


class BurstApp(App):
    def compose(self) -> ComposeResult:
        yield LogView(window=20000)


def pct(values: list[float], q: float) -> float:
    values = sorted(values)
    return values[min(len(values) - 1, int(q * len(values)))]


async def run(seconds: float, rate: int) -> None:
    app = BurstApp()
    async with app.run_test(size=(160, 45)) as pilot:
        view = app.query_one(LogView)
        lags: list[float] = []
        stop = False

        async def probe() -> None:
            while not stop:
                started = time.perf_counter()
                await asyncio.sleep(0.05)
                lags.append(time.perf_counter() - started - 0.05)

        probe_task = asyncio.create_task(probe())
        handle: list[float] = []
        per_batch = rate // 10
        number = 0
        burst_started = time.perf_counter()
        for _ in range(int(seconds * 10)):
            batch = []
            for _ in range(per_batch):
                number += 1
                level = "ERROR" if number % 997 == 0 else "INFO"
                batch.append(f"[2026-11-29 14:02:{number % 60:02d} TP{number % 8}] {level} Decode batch. "
                             f"#running-req: 256, #token: {number}, gen throughput (token/s): 612.40")
            started = time.perf_counter()
            view.add_lines(batch)
            handle.append(time.perf_counter() - started)
            await pilot.pause(max(0.0, 0.1 - (time.perf_counter() - started)))
        elapsed = time.perf_counter() - burst_started
        stop = True
        await probe_task
        print(f"burst: {number} lines in {elapsed:.2f} s ({number / elapsed:,.0f} lines/s offered at {rate:,}/s)")
        print(f"batch handling: median {statistics.median(handle) * 1000:.1f} ms, "
              f"p99 {pct(handle, 0.99) * 1000:.1f} ms, max {max(handle) * 1000:.1f} ms (a batch = {per_batch} lines)")
        print(f"event loop lag: median {statistics.median(lags) * 1000:.1f} ms, p99 {pct(lags, 0.99) * 1000:.1f} ms, "
              f"max {max(lags) * 1000:.1f} ms")
        print(f"lines kept: window {len(view.window)}, widget {view.line_count}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument("--rate", type=int, default=10000)
    args = parser.parse_args()
    asyncio.run(run(args.seconds, args.rate))


if __name__ == "__main__":
    main()
