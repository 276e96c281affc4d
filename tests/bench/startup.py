"""Startup figures: `gpudeck --help` wall time and the console's time to first frame.

    .venv/bin/python tests/bench/startup.py [--runs N]

Prints the median and min of N runs of each (fresh processes, so imports count;
for the first frames also the process's CPU time, which a loaded machine bends less),
runs of the three kinds alternated, with the load average, and the same for a
bare `python -c pass` as the peer (the interpreter's own start).

`demo first frame` is `gpudeck demo`'s path headless: the command's imports,
the demo world built, the console composed and drawn once.

Figures (2-core VM shared with other jobs, load 4.6-5.5, 2026-12-01; median
(min) of 7 alternated runs; "before" is --base at the commit before the
startup work):

    gpudeck profiles list:          111 ms (78)   before 197 ms (140)   (no host runtime imported)
    gpudeck --help:                  88 ms (60)   before  83 ms (60)    no significant difference
    demo first frame, CPU:          943 ms (898)  before 1006 ms (976)  (no httpx; no fsync in setup)
    demo first frame, wall:        2355 ms (1656) before 2216 ms (1746) no significant difference
    console first frame, CPU:       781 ms (731)  before 775 ms (753)   no significant difference

Modules imported before the demo's first frame: 571, before 708. Most of the
first frame is Textual composing every pane (screens/app.py builds all six
at start), not imports.
"""
from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = str(Path(__file__).resolve().parents[2])
from _alternate import alternate, load_line, times_peer  # noqa: E402  (this script's folder)

CPU = r"""
import resource
def _cpu():
    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime
"""

FIRST_FRAME = CPU + r"""
import asyncio, time, sys
t0 = float(sys.argv[1])
from screens.app import GpudeckApp
async def main():
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        print(time.time() - t0, _cpu())
asyncio.run(main())
"""

DEMO_FIRST_FRAME = CPU + r"""
import asyncio, time, sys
t0 = float(sys.argv[1])
import console.cli
from console.commands import demo as command
from console.demo import setup
world = setup(None)
from screens.app import GpudeckApp
async def main():
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        await pilot.pause()
        print(time.time() - t0, _cpu(), flush=True)
try:
    asyncio.run(main())
finally:
    world.close()
"""


def _median(values: list[float]) -> str:
    return f"median {statistics.median(values) * 1000:.0f} ms, min {min(values) * 1000:.0f} ms"


def _one_round(env: dict, out: dict[str, list[float]]) -> None:
    """One run of each figure, in fresh processes (run in the tree measured: `-m` looks there first)."""
    cwd = env.get("PYTHONPATH", ROOT)
    for label, argv in (("--help", ["-m", "console", "--help"]), ("profiles list", ["-m", "console", "profiles", "list"])):
        started = time.perf_counter()
        subprocess.run([sys.executable, *argv], env=env, cwd=cwd, capture_output=True, check=True)
        out.setdefault(label, []).append(time.perf_counter() - started)
    for label, script in (("first frame", FIRST_FRAME), ("demo first frame", DEMO_FIRST_FRAME)):
        done = subprocess.run([sys.executable, "-c", script, repr(time.time())], env=env, cwd=cwd,
                              capture_output=True, text=True, check=True).stdout
        wall, cpu = done.strip().splitlines()[-1].split()
        out.setdefault(label, []).append(float(wall))
        out.setdefault(label + " cpu", []).append(float(cpu))


LABELS = {"--help": "gpudeck --help wall time",
          "profiles list": "gpudeck profiles list wall time (an offline command)",
          "first frame": "time to first frame (process start to first composed frame, headless 160x45)",
          "first frame cpu": "CPU time to first frame (less bent by other load than the wall time)",
          "demo first frame": "demo first frame (gpudeck demo's path, headless 160x45)",
          "demo first frame cpu": "CPU time to the demo's first frame"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--base", help="another checkout (console, profiles, screens, widgets), "
                                       "run alternately with this one")
    args = parser.parse_args()
    env = dict(os.environ, GPUDECK_HOME=tempfile.mkdtemp(prefix="gpudeck-startup-"))
    trees = {"this checkout": env}
    if args.base:
        trees["base"] = dict(env, PYTHONPATH=os.path.abspath(args.base))
    bare: list[float] = []
    results: dict[str, dict[str, list[float]]] = {name: {} for name in trees}
    loads: list[float] = []
    for _i, names in alternate(trees, args.runs, loads):
        started = time.perf_counter()
        subprocess.run([sys.executable, "-c", "pass"], env=env, capture_output=True, check=True)
        bare.append(time.perf_counter() - started)
        for name in names:
            _one_round(trees[name], results[name])
    print(load_line(loads))
    print(f"python -c pass (the peer): {_median(bare)}")
    for key, label in LABELS.items():
        for name, figures in results.items():
            values = figures[key]
            print(f"{label} [{name}]: {_median(values)} ({args.runs} runs; "
                  f"{times_peer(values, bare):.1f}x the peer)")


if __name__ == "__main__":
    main()
