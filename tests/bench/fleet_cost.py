"""What reading a fleet from Prometheus costs gpudeck, each figure against a peer.

Part 1, 1,024 GPUs (128 hosts x 8) through a real Prometheus scraping simulated
DCGM exporters every second. Each figure is the CPU of one process over a window
at 1 Hz:
  - the peer: a bare client asking for the same data the plain way (every DCGM
    series with every label, `PLAIN_QUERY`) once a second and decoding the
    answer (httpx + json), nothing else;
  - the engine: `PrometheusFleet.samples(1.0)`;
  - the view: the fleet view headless, refreshing once a second.
Part 2, 10,000 GPUs (1,250 hosts x 8, about 80,000 series): a stand-in
Prometheus in its own process (tests/prom_peer.py) answers with a fleet that
size, label for label what Prometheus returns for DCGM exporters.
  - `gpudeck gpus -p FLEET` wall time against a bare `python -c` asking the
    plain query and decoding it;
  - key latency in the fleet view while it refreshes, against the same keys
    over 1,024 GPUs, and the process's peak RSS. The view runs in tmux
    (tests/bench/tmux_probe.py); random keys (re-sort, reverse, page down,
    end, home), each timed from the key to the end of the output after which
    the title shows its effect (the sort, or the rows on screen).
Every figure runs in a fresh process; the rounds alternate the order of the
peer and the checkouts (--base: another checkout measured in the same rounds,
for before/after), and the load average is printed.

    python tests/bench/fleet_cost.py [--rounds 3] [--seconds 10] [--keys 40] [--base CHECKOUT] [--skip-prometheus] [--skip-big] [--kinds engine,view]

Figures (2-core VM shared with other jobs, 3 alternated rounds, medians; "before" is --base at
the commit before each change). This VM's speed drifts from one session to the next: the same
peer has read 2.9%, 3.05%, 4.3% and 5.5% of a core, so compare each line against its own peer.

    1,024 GPUs, real Prometheus, 1 Hz, 2026-12-02 (identities cached, value rows read in one pass):
      10 s windows (load 1.3-1.7): peer 5.50% of a core, 55 ms per query
        engine   4.82% (4.25-5.21), 0.88x the peer, 45 ms per refresh   before 5.68%, 1.03x, 54 ms
        view     6.40% (6.03-7.83), 1.16x the peer                      before 7.08%, 1.29x
      31 s windows, each holding one refresh that asks identities (load 1.9-2.8): peer 4.29%, 43 ms
        engine   3.93% (3.69-4.28), 0.92x the peer, 39 ms per refresh   before 4.82%, 1.12x, 48 ms
        view     5.71% (5.44-5.74), 1.33x the peer                      before 6.40%, 1.49x
    2026-12-02 later, a quiet machine (load 0.5-1.7), the same code, 10 s windows: peer 3.19%, 32 ms
        engine   2.89% (2.81-3.09), 0.90x the peer, 27 ms per refresh
        view     3.69% (3.68-3.76), 1.16x the peer
      10,000 GPUs: gpudeck gpus -p FLEET 0.66 s (bare plain query 0.53 s, 1.25x); keys in the view
      p50 136 ms, p99 553 ms (1,024 GPUs: 105 / 201 ms); peak RSS 191 MB. Those key figures were
      Pilot's `press` and `wait_for_scheduled_animations`, which wait until the whole process is
      idle (its CPU time, every thread's): that is, for the refresh being read to end, not for the
      screen. Keys are now timed in tmux, to the screen:
    2026-12-02, keys in tmux, key to title (load 0.1-0.6), 3 alternated rounds x 40 keys pooled,
    "before" is --base 9487f6e, the code before a page key told the title its move at once:
      10,000 GPUs   p50 54 ms, p99 143 ms, max 143 ms   before p50 55 ms, p99 792 ms, max 1,009 ms
      1,024 GPUs    p50 43 ms, p99 101 ms, max 101 ms   before p50 44 ms, p99 811 ms, max 980 ms
      peak RSS at 10,000 GPUs 209 MB (before 193 MB: no memory code changed; it moves with
      when the refreshes fall); gpudeck gpus -p FLEET 0.61 s either way (bare query 0.48 s, 1.25x)
    (2026-12-01, load 4.9-6.1, peer 3.05%: engine 4.75% -> 3.49%, view 6.01% -> 4.57%;
     an earlier session, load 3.6-4.0, peer 2.9%: engine 6.9% -> 4.2%, view 10.3% -> 5.0%)
    10,000 GPUs, stand-in Prometheus (load 3.2-5.1; neither checkout with cached bytecode):
      gpudeck gpus -p FLEET   0.82 s (0.74-1.81)                   before 1.79 s (0.82-1.81);
                                                                   bare plain query 0.50 s (0.50-1.99)
      keys in the view, p50 / p99   195 ms / 1.2 s                before 187 ms / 1.7 s
      peak RSS   216 MB             before 251 MB

    2026-12-07, a loaded machine (load 11.5-13.3), 5 alternated rounds, --kinds engine; "before" is
    the code without sniffio installed (httpcore's failed `import sniffio` walked sys.path about six
    times a refresh, some 2 ms on a quiet machine): the refreshes were paced (3-10 per 10 s window,
    PACE_SHARE) and the CPU per refresh drowned in the noise: peer 62 ms per query, engine 58 ms,
    before 54 ms. The engine's split per refresh then (thread time, no profiler): fetch and gunzip
    27-64 ms, JSON decode, row pass and fold 36-43 ms, flags and host rows 3-5 ms.

The engine asks for the compact shape (console/gpus/fleet_query.py): a short row per value, and one
identity row per GPU only every 30 s or when a GPU is new, so most answers are 0.8x the bytes of the
compact answer with identities and under half those of the plain one. Per refresh at 1,024 GPUs
(quiet): the HTTP exchange and gunzip about 6 ms on the event loop, JSON decoding 8-9 ms, one pass
checking and grouping the rows by GPU 5 ms, building the GPUs 7 ms, flags and host rows 3 ms. At 10,000 GPUs a refresh
reads on a worker thread, so the refreshes space out when reading takes long (PACE_SHARE in
console/gpus/prometheus.py). A key that lands while the JSON decoder holds the interpreter (one C
call, 65-75 ms at 10,000 GPUs on a quiet machine) waits for it: such keys read p50 80 ms (8 of 120)
against 50 ms for the rest. Decoding the answer a run of members at a time cut the longest hold to
17 ms, yet those keys still read p50 76 ms (11 of 120) and the p99 did not move (140 against 138
ms), so it was dropped.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, os.environ.get("GPUDECK_TREE", str(ROOT)))
sys.path.insert(1, str(ROOT))
from _alternate import alternate, load_line, times_peer  # noqa: E402  (this script's folder)

# ------------------------------------------------------------------ workers (one process each)

KEYS = ("o", "O", "PageDown", "End", "Home")   # tmux key names
# The peer's query: every DCGM series gpudeck reads, with all their labels, every `up` and each
# target's last scrape time (what gpudeck asked before it asked for the compact shape).
PLAIN_QUERY = ('{__name__=~"DCGM_FI_DEV_GPU_UTIL|DCGM_FI_DEV_MEM_COPY_UTIL|DCGM_FI_DEV_FB_USED|DCGM_FI_DEV_GPU_TEMP|'
               'DCGM_FI_DEV_POWER_USAGE|DCGM_FI_DEV_POWER_MGMT_LIMIT|DCGM_FI_DEV_SM_CLOCK|DCGM_FI_DEV_XID_ERRORS|'
               'DCGM_FI_DEV_FB_FREE|DCGM_FI_DEV_FB_RESERVED|DCGM_FI_DEV_FB_TOTAL|up"} '
               'or label_replace(timestamp({__name__="up"}), "gpudeck_scrape_ts", "1", "", "")')


def _cpu() -> float:
    import resource

    use = resource.getrusage(resource.RUSAGE_SELF)
    return use.ru_utime + use.ru_stime


async def _bare(url: str, seconds: float) -> dict:
    import httpx

    async with httpx.AsyncClient(timeout=30) as client:
        async def once() -> None:
            json.loads((await client.get(url + "/api/v1/query", params={"query": PLAIN_QUERY})).content)

        await once()
        start_cpu, start, n = _cpu(), time.monotonic(), 0
        while time.monotonic() - start < seconds:
            began = time.monotonic()
            await once()
            n += 1
            await _sleep(max(0.0, 1.0 - (time.monotonic() - began)))
        used = _cpu() - start_cpu
        return {"cpu_pct": used / (time.monotonic() - start) * 100, "refreshes": n, "cpu_ms_each": used / n * 1000}


async def _sleep(s: float) -> None:
    import asyncio

    await asyncio.sleep(s)


async def _engine(url: str, seconds: float) -> dict:
    from console.gpus.prometheus import PrometheusFleet, PromSettings

    fleet = PrometheusFleet(PromSettings(url=url))
    await fleet.sample()                       # warm: connection, targets API, imports
    start_cpu, start, n, gpus = _cpu(), time.monotonic(), 0, 0
    async for sample in fleet.samples(1.0):
        n += 1
        gpus = sum(len(h.gpus) for h in sample.hosts)
        if time.monotonic() - start >= seconds:
            break
    used = _cpu() - start_cpu
    cpu = used / (time.monotonic() - start) * 100
    await fleet.close()
    return {"cpu_pct": cpu, "refreshes": n, "gpus": gpus, "cpu_ms_each": used / n * 1000}


async def _view(url: str, seconds: float) -> dict:
    from console.gpus.prometheus import PrometheusFleet, PromSettings
    from screens.fleet_app import FleetApp

    app = FleetApp(PrometheusFleet(PromSettings(url=url)), "bench", interval_s=1.0)
    async with app.run_test(size=(160, 45)) as pilot:
        while app.latest is None:
            await pilot.pause(0.1)
        start_cpu, start = _cpu(), time.monotonic()
        await pilot.pause(seconds)
        cpu = (_cpu() - start_cpu) / (time.monotonic() - start) * 100
        await _stop_polling(app, pilot)
        return {"cpu_pct": cpu}


async def _stop_polling(app, pilot) -> None:
    """No refresh may land while the app closes (an older view drew on a screen already gone)."""
    app.workers.cancel_all()
    await pilot.pause(0.2)


def worker(kind: str, url: str, seconds: float) -> None:
    import asyncio

    fn = {"bare": _bare, "engine": _engine, "view": _view}[kind]
    print(json.dumps(asyncio.run(fn(url, seconds))), flush=True)


# ------------------------------------------------------------------ keys, timed in tmux

def _expected(key: str, screen: str, sort: str, descending: bool) -> tuple[list[str], str, bool] | None:
    """What the title says once `key` took effect (the sort and the rows on screen), or None for a
    key that would change nothing here (End on the last page)."""
    from console.gpus.fleet_table import SORT_KEYS

    rows = re.search(r"rows (\d+)-(\d+);", screen)
    total = int(re.search(r"showing (\d+)", screen)[1])
    first, last = (int(rows[1]), int(rows[2])) if rows else (1, total)
    height = last - first + 1
    if key == "o":
        sort = SORT_KEYS[(SORT_KEYS.index(sort) + 1) % len(SORT_KEYS)]
    if key == "O":
        descending = not descending
    marks = [f"sort {sort} {'↓' if descending else '↑'}"]
    if key in ("PageDown", "End", "Home"):
        to = {"PageDown": min(first + height, total - height + 1), "End": total - height + 1, "Home": 1}[key]
        if to == first:
            return None
        marks.append(f"rows {to}-{to + height - 1};")
    return marks, sort, descending


def _keys_in_tmux(profile: str, home: Path, tree: Path, count: int, seed: int) -> dict:
    """`count` random keys in the fleet view (tmux, 160x45), each timed from the key to the end of
    the output after which the title shows its effect; the view refreshes meanwhile. Peak RSS."""
    import random

    from tmux_probe import Probe

    rng = random.Random(seed)
    probe = Probe(f"exec env GPUDECK_HOME={home} {sys.executable} -m console -p {profile}", cwd=str(tree))
    try:
        probe.wait_for(["refreshed"], time.perf_counter(), timeout=300)
        pid = probe.pid()
        sort, descending, latencies = "state", False, []
        while len(latencies) < count:
            key = rng.choice(KEYS)
            then = _expected(key, probe.screen(), sort, descending)
            if then is None:
                continue
            marks, sort, descending = then
            sent = probe.send(key)
            latencies.append(probe.wait_for(marks, sent) * 1000)
            time.sleep(rng.uniform(0.2, 0.6))      # keys land anywhere in the refresh cycle
        with open(f"/proc/{pid}/status") as f:
            rss = next(int(line.split()[1]) for line in f if line.startswith("VmHWM:")) / 1024
        return {"keys_ms": latencies, "rss_mb": rss}
    finally:
        probe.close()


# ------------------------------------------------------------------ the driver

def _run(kind: str, url: str, seconds: float, tree: Path) -> dict:
    env = dict(os.environ, GPUDECK_TREE=str(tree), PYTHONPATH=str(tree))
    out = subprocess.run([sys.executable, __file__, "--worker", kind, "--url", url, "--seconds", str(seconds)],
                         env=env, cwd=tree, capture_output=True, text=True, timeout=seconds * 10 + 300)
    if out.returncode != 0:
        raise SystemExit(f"{kind} worker in {tree} failed:\n{out.stderr[-2000:]}")
    return json.loads(out.stdout.strip().splitlines()[-1])


def _wall(argv: list[str], env: dict, cwd: Path) -> float:
    began = time.perf_counter()
    out = subprocess.run(argv, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    took = time.perf_counter() - began
    if out.returncode != 0:
        raise SystemExit(f"{argv[:4]}... failed ({out.returncode}): {out.stderr[-800:]}")
    return took


def _pct(values: list[float]) -> str:
    return f"median {statistics.median(values):.2f}% ({', '.join(f'{v:.2f}' for v in values)})"


def part_prometheus(trees: dict[str, Path], args, loads: list[float]) -> None:
    from tests.prometheus_part import Prometheus, SimExporters

    base = Path(tempfile.mkdtemp(prefix="gpudeck-fleet-bench-"))
    exporters = SimExporters.start(base / "state", args.hosts, args.gpus)
    prom = Prometheus(base / "prom", exporters.targets).start()
    try:
        prom.wait_up(args.hosts, 120)
        cpu: dict[str, list[float]] = {}
        each: dict[str, list[float]] = {}
        counts: dict[str, list[int]] = {}
        order = ["bare"] + [f"{k}:{t}" for k in args.kinds.split(",") for t in trees]
        for _i, names in alternate(order, args.rounds, loads):
            for name in names:
                kind, _, tree = name.partition(":")
                result = _run(kind, prom.url, args.seconds, trees.get(tree, ROOT))
                cpu.setdefault(name, []).append(result["cpu_pct"])
                if "cpu_ms_each" in result:
                    each.setdefault(name, []).append(result["cpu_ms_each"])
                    counts.setdefault(name, []).append(result["refreshes"])
        print(f"\n{args.hosts} hosts x {args.gpus} GPUs through a real Prometheus, 1 Hz, {args.seconds:g} s windows, "
              f"{args.rounds} alternated rounds (% of one core):")
        print(f"  bare query + json decode (the peer): {_pct(cpu['bare'])}; "
              f"{statistics.median(each['bare']):.0f} ms of CPU per query")
        for name, values in cpu.items():
            if name != "bare":
                kind, _, tree = name.partition(":")
                line = f"  {kind} [{tree}]: {_pct(values)}; {times_peer(values, cpu['bare']):.2f}x the peer"
                if name in each:   # a refresh slower than a quarter second is paced: say how often it ran
                    ms, peer_ms = statistics.median(each[name]), statistics.median(each["bare"])
                    line += (f"; {ms:.0f} ms of CPU per refresh ({ms / peer_ms:.2f}x the peer's query), "
                             f"refreshes per window {counts[name]}")
                print(line)
    finally:
        prom.stop()
        exporters.stop()


def part_big(trees: dict[str, Path], args, loads: list[float]) -> None:
    peer_proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "prom_peer.py"), "--hosts", str(args.big_hosts),
                                  "--gpus", str(args.gpus)], stdout=subprocess.PIPE, text=True)
    small_proc = subprocess.Popen([sys.executable, str(ROOT / "tests" / "prom_peer.py"), "--hosts", str(args.hosts),
                                   "--gpus", str(args.gpus)], stdout=subprocess.PIPE, text=True)
    try:
        url, small_url = peer_proc.stdout.readline().strip(), small_proc.stdout.readline().strip()
        home = Path(tempfile.mkdtemp(prefix="gpudeck-fleet-bench-home-"))
        env = dict(os.environ, GPUDECK_HOME=str(home))
        for name, at in (("big", url), ("small", small_url)):
            subprocess.run([sys.executable, "-m", "console", "profiles", "add", name, "--prometheus", at,
                            "--max-answer-mb", "256", "--prom-timeout", "120"],
                           env=env, cwd=ROOT, check=True, capture_output=True)
        bare_cli = [sys.executable, "-c",
                    "import httpx, json, sys; "
                    "json.loads(httpx.get(sys.argv[1] + '/api/v1/query', params={'query': sys.argv[2]}, "
                    "timeout=120).content)", url, PLAIN_QUERY]
        walls: dict[str, list[float]] = {}
        for _i, names in alternate(["bare", *trees], args.rounds, loads):
            for name in names:
                tree = trees.get(name, ROOT)
                argv = bare_cli if name == "bare" else [sys.executable, "-m", "console", "gpus", "-p", "big"]
                walls.setdefault(name, []).append(_wall(argv, dict(env, PYTHONPATH=str(tree)), tree))
        gpus = args.big_hosts * args.gpus
        print(f"\n{gpus:,} GPUs ({args.big_hosts} hosts x {args.gpus}), a stand-in Prometheus in its own process:")
        for name, values in walls.items():
            label = "bare query + json decode, fresh process (the peer)" if name == "bare" else f"gpudeck gpus -p [{name}]"
            print(f"  {label}: median {statistics.median(values):.2f} s ({', '.join(f'{v:.2f}' for v in values)}); "
                  f"{times_peer(values, walls['bare']):.2f}x the peer")
        keys: dict[str, list[float]] = {}
        rss: dict[str, list[float]] = {}
        order = [f"{size}:{t}" for size in ("small", "big") for t in trees]
        for _i, names in alternate(order, args.rounds, loads):
            for name in names:
                size, _, tree = name.partition(":")
                result = _keys_in_tmux(size, home, trees[tree], args.keys, seed=_i)
                keys.setdefault(name, []).extend(result["keys_ms"])
                rss.setdefault(name, []).append(result["rss_mb"])
        print(f"  key latency in the fleet view while it refreshes (keys {' '.join(KEYS)}, {args.keys} a run), "
              "key to the title showing it, in tmux:")
        for tree in trees:
            small = keys[f"small:{tree}"]
            for size in ("small", "big"):
                values = sorted(keys[f"{size}:{tree}"])
                p50, p99 = values[len(values) // 2], values[min(len(values) - 1, int(len(values) * 0.99))]
                what = f"{args.hosts * args.gpus:,} GPUs" if size == "small" else f"{gpus:,} GPUs"
                print(f"    [{tree}] {what}: p50 {p50:.0f} ms, p99 {p99:.0f} ms, max {values[-1]:.0f} ms "
                      f"({len(values)} keys; p50 {p50 / statistics.median(small):.1f}x the small fleet's); "
                      f"peak RSS {statistics.median(rss[f'{size}:{tree}']):.0f} MB")
    finally:
        peer_proc.terminate()
        small_proc.terminate()


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--hosts", type=int, default=128)
    ap.add_argument("--gpus", type=int, default=8)
    ap.add_argument("--big-hosts", type=int, default=1250)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--keys", type=int, default=40, help="keys timed per run of the fleet view")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--base", help="another checkout, measured in the same rounds")
    ap.add_argument("--skip-prometheus", action="store_true", help="only the 10,000-GPU part")
    ap.add_argument("--skip-big", action="store_true", help="only the real-Prometheus part")
    ap.add_argument("--kinds", default="engine,view", help="what the real-Prometheus part measures besides the peer")
    ap.add_argument("--worker", help=argparse.SUPPRESS)
    ap.add_argument("--url", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.worker:
        worker(args.worker, args.url, args.seconds)
        return 0
    trees = {"this checkout": ROOT}
    if args.base:
        trees["base"] = Path(args.base).resolve()
    loads: list[float] = []
    if not args.skip_prometheus:
        part_prometheus(trees, args, loads)
    if not args.skip_big:
        part_big(trees, args, loads)
    print(f"\n{load_line(loads)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
