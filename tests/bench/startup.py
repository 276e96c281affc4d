"""Startup figures: `gpudeck --help` wall time and the console's time to first frame.

    .venv/bin/python tests/bench/startup.py [--runs N]

Prints the median and min of N runs of each (fresh processes, so imports count).
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time

FIRST_FRAME = r"""
import asyncio, time, sys
t0 = float(sys.argv[1])
from screens.app import GpudeckApp
async def main():
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        print(time.time() - t0)
asyncio.run(main())
"""


def _median(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms, min {min(values) * 1000:.0f} ms"


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    env = dict(os.environ, GPUDECK_HOME=tempfile.mkdtemp(prefix="gpudeck-startup-"))
    helps = []
    for _ in range(args.runs):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-m", "console", "--help"], env=env, capture_output=True, check=True)
        helps.append(time.perf_counter() - started)
    frames = []
    for _ in range(args.runs):
        out = subprocess.run([sys.executable, "-c", FIRST_FRAME, repr(time.time())], env=env,
                             capture_output=True, text=True, check=True).stdout
        frames.append(float(out.strip().splitlines()[-1]))
    print(f"gpudeck --help wall time: {_median(helps)} ({args.runs} runs)")
    print(f"time to first frame (process start to first composed frame, headless 160x45): {_median(frames)}")


if __name__ == "__main__":
    main()
