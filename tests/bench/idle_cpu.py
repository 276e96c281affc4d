"""The idle console's CPU in a real terminal (tmux 160x45): `gpudeck demo` left alone on a tab, against a peer.

    .venv/bin/python tests/bench/idle_cpu.py [--repeats 3] [--cpu-s 30] [--tabs 1,3] [--base DIR]

Each run starts a fresh `python -m console demo` (TMPDIR and GPUDECK_HOME in a
scratch folder), waits for its GPUs tab, then for each tab in `--tabs`: the
digit key, 5 s to settle, and `--cpu-s` seconds of reading /proc. Three
figures, each as % of one core:

- the process: its own utime + stime (every thread);
- reaped children: cutime + cstime, what the short-lived commands it started
  and waited for used (a `ps`, a one-shot `nvidia-smi`, the demo's simulated
  nvidia-smi being a Python start each time);
- live children: what its descendants still running used meanwhile (the
  long-lived `nvidia-smi -lms` streams).

The peer is tui_keys.py's minimal Textual app (six tabs of a line each and a
footer) in the same terminal. `--base DIR` runs another checkout's demo too
(the code before a change). Kinds are alternated `--repeats` times; the load
average is printed with each run.

Figures (2-core VM shared with other engineers' jobs, 2026-12-02, load 0.6-2.7;
3 alternated repeats x 30 s a tab, median (min-max), % of one core; "base" is
integ2 b4a2da1, before this work):

    GPUs tab   gpudeck  process 1.47 (1.43-1.50)  reaped 0.47 (0.43-0.47)  live 0.13  total 2.03
               base     process 2.03 (1.83-2.13)  reaped 3.07 (2.87-3.10)  live 0.10  total 5.23
               peer     process 0.13 (0.10-0.13)                                      total 0.13
    Bench tab  gpudeck  process 1.03 (0.97-1.03)  reaped 0.50 (0.47-1.27)  live 0.13  total 1.67
               base     process 1.17 (1.13-1.20)  reaped 3.07 (2.90-4.03)  live 0.13  total 4.43
               peer     process 0.13 (0.10-0.13)                                      total 0.13

Where base's went: the demo has two simulated hosts (`demo`, and `local`, whose
PATH finds the stand-in too), each sampled through one long-lived
`nvidia-smi -lms 1000` (0.1% together: no process per sample), but each also
read its process list every 5 s with a one-shot `nvidia-smi
--query-compute-apps`, in the demo a Python start of the simulator (60-70 ms of
CPU): 0.4 starts a second, the 3% of reaped children. Now the list is read when
a GPU's memory moves and at least every 30 s (console/gpus/sampler.py): two
reads in 30 s, the 0.47% left. On the GPUs tab each sample also laid the whole
screen out four times (the process table shown then hidden again, the
"Processes" label and the status line set again): py-spy put 33% of the
main thread's busy samples in Screen._refresh_layout; now the status line's
new age is a repaint and nothing is laid out (busy samples 194 -> 80 in 30 s).
The Server tab, hidden, listed the host's processes (`ps`) every 5 s for rows
nobody saw; now only while it is on screen.
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _alternate import alternate, load_average  # noqa: E402
from tmux_probe import Probe  # noqa: E402
from tui_keys import GPUDECK_TABS, PEER, PEER_TABS  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
HZ = os.sysconf("SC_CLK_TCK")
SETTLE_S = 5.0


def _stat(pid: int) -> list[str]:
    with open(f"/proc/{pid}/stat") as f:
        return f.read().rpartition(")")[2].split()


def _descendants(pid: int) -> list[int]:
    """Every live process below `pid` (Linux /proc)."""
    parent: dict[int, int] = {}
    for name in os.listdir("/proc"):
        if name.isdigit():
            try:
                parent[int(name)] = int(_stat(int(name))[1])
            except (OSError, IndexError, ValueError):
                continue
    out, todo = [], [pid]
    while todo:
        p = todo.pop()
        kids = [c for c, pp in parent.items() if pp == p]
        out += kids
        todo += kids
    return out


def _reading(pid: int) -> tuple[float, float, dict[int, float]]:
    """(own seconds, reaped children's seconds, each live descendant's seconds with its own reaped)."""
    f = _stat(pid)
    live = {}
    for child in _descendants(pid):
        try:
            c = _stat(child)
        except OSError:
            continue
        live[child] = sum(int(x) for x in c[11:15]) / HZ
    return (int(f[11]) + int(f[12])) / HZ, (int(f[13]) + int(f[14])) / HZ, live


def measure(pid: int, seconds: float) -> dict[str, float]:
    """% of one core over `seconds`: the process, its reaped children, its live descendants."""
    own0, reaped0, live0 = _reading(pid)
    t0 = time.perf_counter()
    time.sleep(seconds)
    own1, reaped1, live1 = _reading(pid)
    dt = time.perf_counter() - t0
    live = sum(v - live0.get(p, 0.0) for p, v in live1.items())
    return {"process": 100 * (own1 - own0) / dt, "reaped": 100 * (reaped1 - reaped0) / dt, "live": 100 * live / dt}


def run_console(cwd: Path, tabs: list[str], seconds: float, tmp: str) -> dict[str, dict[str, float]]:
    scratch = tempfile.mkdtemp(prefix="idle-", dir=tmp)
    env = {**os.environ, "TMPDIR": scratch, "GPUDECK_HOME": os.path.join(scratch, "home")}
    probe = Probe(f"exec {shlex.quote(sys.executable)} -m console demo", env=env, cwd=str(cwd))
    return _each_tab(probe, ["1 GPUs", GPUDECK_TABS["1"]], GPUDECK_TABS, tabs, seconds, timeout=90)


def run_peer(tabs: list[str], seconds: float) -> dict[str, dict[str, float]]:
    probe = Probe(f"exec {shlex.quote(sys.executable)} -c {shlex.quote(PEER)}", cwd=str(ROOT))
    return _each_tab(probe, [PEER_TABS["1"]], PEER_TABS, tabs, seconds, timeout=60)


def _each_tab(probe: Probe, started: list[str], bodies: dict[str, str], tabs: list[str], seconds: float,
              timeout: float) -> dict[str, dict[str, float]]:
    """Once the app shows `started`: each tab shown, let settle, then its CPU measured; the probe closed."""
    try:
        probe.wait_for(started, time.perf_counter(), timeout=timeout)
        pid = probe.pid()
        out = {}
        for tab in tabs:
            probe.send(tab)
            probe.wait_for([bodies[tab]], time.perf_counter())
            time.sleep(SETTLE_S)
            out[tab] = measure(pid, seconds)
        return out
    finally:
        probe.close()


def _line(r: dict[str, float]) -> str:
    return (f"process {r['process']:4.2f}%  reaped children {r['reaped']:4.2f}%  live children {r['live']:4.2f}%"
            f"  total {sum(r.values()):4.2f}%")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--cpu-s", type=float, default=30.0, help="seconds of /proc reading per tab")
    parser.add_argument("--tabs", default="1,3", help="the tabs left on screen, by their digit key")
    parser.add_argument("--base", help="another checkout's demo, measured too (e.g. before a change)")
    args = parser.parse_args()
    tabs = [t.strip() for t in args.tabs.split(",") if t.strip()]
    if not tabs or any(t not in GPUDECK_TABS for t in tabs):
        raise SystemExit(f"--tabs: digits 1-6, got {args.tabs!r}")
    kinds = ["gpudeck", "peer"] + (["base"] if args.base else [])
    results: dict[str, list[dict]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="gpudeck-idle-cpu-") as tmp:
        for rep, order in alternate(kinds, args.repeats):
            for kind in order:
                if kind == "peer":
                    r = run_peer(tabs, args.cpu_s)
                else:
                    r = run_console(Path(args.base).resolve() if kind == "base" else ROOT, tabs, args.cpu_s, tmp)
                results[kind].append(r)
                for tab, figures in r.items():
                    print(f"repeat {rep + 1} {kind:8s} tab {tab}  {_line(figures)}  · load {load_average()}",
                          flush=True)
    print(f"\nidle CPU, % of one core, tmux 160x45, {args.repeats} alternated repeats x {args.cpu_s:g} s a tab;"
          f" median (min-max):")
    for tab in tabs:
        for kind, rs in results.items():
            parts = []
            for key in ("process", "reaped", "live"):
                values = [r[tab][key] for r in rs]
                parts.append(f"{key} {statistics.median(values):4.2f} ({min(values):.2f}-{max(values):.2f})")
            totals = [sum(r[tab].values()) for r in rs]
            print(f"  tab {tab} {kind:8s} {'  '.join(parts)}  total {statistics.median(totals):4.2f}%")
    print(f"load average at the end: {load_average()}; cores: {os.cpu_count()}")


if __name__ == "__main__":
    main()
