"""Tab-switch key latency of the console in tmux, idle and during a 512-stream sweep, and its CPU.

    .venv/bin/python tests/bench/tui_keys.py [--repeats 3] [--keys 36] [--base DIR]

What runs:
- a local SSE source (its own process, below): `/v1/models` lists one model,
  every completion streams one token each `--interval-ms` (25 ms: 512 streams
  are about 20k tok/s), `--output-len` tokens a request (200: 5 s; the level
  runs `--num-prompts` 12 a stream, about a minute);
- gpudeck: the demo world (`console.demo.setup`) with its Bench form
  remembered as one 512-stream level against that source, the console in tmux
  160x45. First each tab is shown once, in order, and timed apart: a tab's
  first showing lays out and draws its widgets for the first time. Idle: digit
  keys 1-6 in a shuffled order, each timed from the key to the end of the
  output burst after which the screen shows that tab's body
  (tests/bench/tmux_probe.py). Then `3 r y` starts the sweep from the Bench
  tab; the console's CPU is read from /proc over `--cpu-s` seconds with the
  Bench tab on screen, then the keys are timed again while the sweep runs;
- the peer: a minimal Textual app with six tabs (a line of text each) and a
  footer, the same keys timed idle and while the same sweep runs from the CLI
  (`python -m console bench`), so the machine carries the same load and the
  difference is what the console's drawing costs.

`--base DIR` runs another checkout's console too (e.g. the code before a
change). Kinds are alternated, `--repeats` times; the load average is printed
with each. Reported: p50 and p99 per kind (all repeats pooled), the ratio to
the peer, CPU as % of one core, and the CPU seconds one idle tab switch costs
beyond the idle app (work, not waiting: the steadiest figure on a loaded box).

Figures (2-core VM shared with other engineers' jobs, 2026-12-01; 2 alternated
repeats x 30 keys pooled, load 2.0-4.1; "before" is --base at the commit before
this work; the peer is the minimal app):

    idle   p50  42 ms (2.7x peer)  p99 127 ms (4.1x)   before  61 ms (3.9x), p99  267 ms (8.5x)
    sweep  p50  58 ms (4.0x peer)  p99 161 ms (5.2x)   before  87 ms (6.0x), p99 1282 ms (41x)
    CPU, Bench tab on screen during the sweep: 2.0-2.5%  before 5.9-6.1%
    CPU idle: 1.6-1.7%                                before 1.7-2.1%

The footer rewriting its keys in place (and the keys panel looked for among
the screen's children), 3 alternated repeats x 16 keys, load 3.4-6.1, against
--base at the commit before it:

    CPU per idle switch  71.5 ms (68.5-77.6)   before 87.2 ms (80.3-105.8)   peer 42.5 ms
    idle   p50  84 ms (per repeat 56-123)      before 77 ms (61-83)          peer 20 ms
    sweep  p50  84 ms (per repeat 71-124)      before 138 ms (138-153)       peer 20 ms
    p99 at that load: 447 / 797 ms, before 797 / 717 ms; the peer's own idle p99 was 442 ms

The same at load 0.6-1.4 (the footer looking after the frame, as committed):

    CPU per idle switch  69.7 ms (67.7-78.4)   before 80.5 ms (78.3-85.8)   peer 39.0 ms
    idle   p50  40 ms (2.54x peer)  p99 156 ms   before p50 38 ms (2.41x)  p99 168 ms
    sweep  p50  38 ms (3.10x peer)  p99 202 ms   before p50 43 ms (3.44x)  p99 194 ms

2026-12-02, a slower day on this box (the peer's own switch cost 88 ms of CPU, 39 the day
before): the console's heap frozen once it has started (console/heap.py), no whole-screen
repaint on a focus move (screens/deck_screen.py), and the Bench form one widget a field,
against --base a4bdfb2; 3 alternated repeats x 30 keys, load 0.9-1.7:

    idle   p50  61 ms (2.80x peer)  p99 131 ms (1.10x peer)   before  67 ms (3.07x), p99 269 ms (2.25x)
    sweep  p50  61 ms               p99 153 ms                before  72 ms,         p99 332 ms
    CPU per idle switch  99.0 ms (94.9-102.9)   before 112.0 ms (101.4-113.8)   peer 88.1 ms
    (the peer missed a key during its sweep in one repeat: its sweep p99 is "inf", no ratio)

2026-12-02, a quiet day (load 0.2-0.6): the tab containers drawn as blank lines
(screens/deck_tabs.py) and table cells drawn again only when what they show
changed (widgets/drawn_cells.py), against --base 6330047 (the code before them);
3 alternated repeats x 30 keys pooled, each tab's first visit timed apart:

    idle   p50  20 ms (1.55x peer)  p99  50 ms (2.13x)   before p50 26 ms (1.97x), p99  67 ms
    sweep  p50  20 ms (1.57x peer)  p99  72 ms           before p50 28 ms (2.17x), p99  74 ms
           (per repeat the sweep's max was 296, 72 and 44 ms; the base's 887, 74 and 73 ms)
    first visit of each tab  p50 26 ms, max 57 ms        before p50 33 ms, max 72 ms; peer 16/21 ms
    CPU per idle switch  43.8 ms (42.8-46.4)   before 49.8 ms (46.5-53.2)   peer 34.4 ms
    CPU idle 1.7%, Bench tab during the sweep 2.7%    before 2.2% and 3.1%
    (the peer missed a key during its sweep again: its sweep p99 is "inf")

Headless, a switch now takes 15 ms from the key to the frame (p50): 5 ms
restyling the tab strip (Textual's `-active` class moving between two tabs),
6.5 ms drawing, 1.3 ms layout.

The p99 was the cyclic collector: a full collection walked the ~165,000 objects
the six tabs had built, 100-200 ms, once every few dozen switches. Headless, a
switch now spends its time in Textual's compositor: p50 35 ms from the key to
the frame, 21 ms of it building and cutting the new tab's lines (every widget
in the tab, containers included, makes a Strip a line, each with seven small
caches), 6 ms in the tab strip's and switcher's restyle, 2.4 ms in layout.

An earlier run at load 7-10 (the before code only, 3 repeats): idle p50 132 ms,
p99 543 ms; sweep p50 1296 ms, p99 4798 ms; sweep CPU 5.9-8.5%. On this box
the latency tracks the load: a switch costs 70-100 ms of CPU (Textual laying out
and painting the tab), and a loaded core hands it out slowly.
"""
from __future__ import annotations

import argparse
import asyncio
import json
import math
import os
import random
import shlex
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _alternate import alternate, load_average, pct  # noqa: E402
from tmux_probe import Probe, cpu_seconds  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]
STREAMS = 512

# what only that tab's body shows (the tab strip names every tab, so it can't tell them apart)
GPUDECK_TABS = {"1": "util, 5 min", "2": "effective (log)", "3": "TTFT p50/p99 ms", "4": "ideal tok/s",
                "5": "Complete theoretical max", "6": "crash / note"}
PEER_TABS = {str(i): f"peer tab {i} body" for i in range(1, 7)}

PEER = r"""
from textual.app import App
from textual.widgets import Footer, Static, TabbedContent, TabPane
class Peer(App):
    BINDINGS = [("q", "quit", "quit")] + [(str(i), f"tab('t{i}')", f"tab {i}") for i in range(1, 7)]
    def compose(self):
        with TabbedContent(initial="t1"):
            for i in range(1, 7):
                with TabPane(f"{i} Tab", id=f"t{i}"):
                    yield Static(f"peer tab {i} body")
        yield Footer()
    def action_tab(self, tab):
        self.query_one(TabbedContent).active = tab
Peer().run()
"""

CONSOLE = r"""
import sys
from console.demo import setup
demo = setup(None, port=int(sys.argv[1]))
from console.bench import form_memory
form_memory.save("demo", {"url": f"http://127.0.0.1:{sys.argv[1]}", "levels": "512", "input_len": "32",
                          "output_len": sys.argv[2], "num_prompts": sys.argv[3], "model": "bench-model",
                          "api": "completions"})
from screens.app import GpudeckApp
try:
    GpudeckApp(profile_name="demo").run()
finally:
    demo.stop()
    demo.close()
"""


# ---------------------------------------------------------------- the SSE source

def _chunk(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


def _event(text: str, final: bool = False, tokens: int = 0) -> bytes:
    doc = {"id": "cmpl-1", "object": "text_completion", "created": 1790000000, "model": "bench-model",
           "choices": [{"index": 0, "text": text, "logprobs": None, "finish_reason": "length" if final else None}]}
    if final:
        doc["usage"] = {"prompt_tokens": 32, "completion_tokens": tokens, "total_tokens": 32 + tokens}
    return _chunk(b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n")


class _Conn(asyncio.Protocol):
    def __init__(self, source: "_Source"):
        self.source, self.buf, self.transport = source, b"", None

    def connection_made(self, transport):
        self.transport = transport

    def data_received(self, data):
        self.buf += data
        head, sep, body = self.buf.partition(b"\r\n\r\n")
        if not sep:
            return
        length = 0
        for line in head.split(b"\r\n"):
            if line.lower().startswith(b"content-length:"):
                length = int(line.split(b":")[1])
        if len(body) < length:
            return
        self.buf = body[length:]
        path = head.split(b" ", 2)[1]
        if head.startswith(b"GET"):
            doc = b'{"object":"list","data":[{"id":"bench-model","object":"model"}]}' \
                if path.startswith(b"/v1/models") else b"{}"
            status = b"200 OK" if path.startswith((b"/v1/models", b"/health")) else b"404 Not Found"
            self.transport.write(b"HTTP/1.1 " + status + b"\r\nContent-Type: application/json\r\nContent-Length: "
                                 + str(len(doc)).encode() + b"\r\n\r\n" + doc)
            return
        self.transport.write(b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\n"
                             b"Transfer-Encoding: chunked\r\n\r\n")
        self.source.active[self] = 0

    def connection_lost(self, exc):
        self.source.active.pop(self, None)


class _Source:
    def __init__(self, tokens: int, interval: float):
        self.tokens, self.interval, self.active = tokens, interval, {}
        self.token = _event(" tok")
        self.final = _event("", final=True, tokens=tokens) + _chunk(b"data: [DONE]\n\n") + b"0\r\n\r\n"

    async def pump(self):
        next_at = time.perf_counter()
        while True:
            next_at += self.interval
            await asyncio.sleep(max(0.0, next_at - time.perf_counter()))
            for conn, sent in list(self.active.items()):
                if sent < self.tokens:
                    conn.transport.write(self.token)
                    self.active[conn] = sent + 1
                else:  # the response ends; the connection stays for the next request
                    conn.transport.write(self.final)
                    self.active.pop(conn, None)


async def _serve(port: int, tokens: int, interval: float) -> None:
    source = _Source(tokens, interval)
    server = await asyncio.get_running_loop().create_server(lambda: _Conn(source), "127.0.0.1", port, backlog=2048)
    print("ready", flush=True)
    async with server:
        await source.pump()


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


# ---------------------------------------------------------------- the measurements

def _time_keys(probe: Probe, tabs: dict[str, str], count: int, rng: random.Random) -> list[float]:
    out: list[float] = []
    current = None
    while len(out) < count:
        key = rng.choice([k for k in tabs if k != current])
        t0 = probe.send(key)
        try:
            out.append(probe.wait_for([tabs[key]], t0, timeout=30))
        except TimeoutError:
            out.append(float("inf"))  # never shown: counted, as the slowest there is
        current = key
        time.sleep(0.25 + rng.random() * 0.1)  # keys an operator types, not a flood
    return out


def _first_visits(probe: Probe, tabs: dict[str, str]) -> list[float]:
    """Each tab shown once, from the first: a tab's first showing lays out and draws its widgets
    for the first time (charts sized, tables measured), so it is timed apart from the steady state."""
    out = []
    for key in [*list(tabs)[1:], next(iter(tabs))]:
        t0 = probe.send(key)
        try:
            out.append(probe.wait_for([tabs[key]], t0, timeout=30))
        except TimeoutError:
            out.append(float("inf"))
        time.sleep(0.3)
    return out


def _time_keys_cpu(probe: Probe, tabs: dict[str, str], count: int, rng: random.Random, pid: int,
                   idle_cpu: float) -> tuple[list[float], float]:
    """The keys' latencies, and the CPU seconds one switch costs beyond what the idle app uses
    (less sensitive to a loaded machine than the latency: it counts work, not waiting)."""
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    out = _time_keys(probe, tabs, count, rng)
    busy = cpu_seconds(pid) - c0 - idle_cpu / 100 * (time.perf_counter() - t0)
    return out, max(0.0, busy) / count


def _cpu_percent(pid: int, seconds: float) -> float:
    c0, t0 = cpu_seconds(pid), time.perf_counter()
    time.sleep(seconds)
    return 100 * (cpu_seconds(pid) - c0) / (time.perf_counter() - t0)


def _app_pid(probe: Probe) -> int:
    """The Python process in the pane (the pane's own process is the shell that execs it)."""
    return probe.pid()


def run_console(cwd: Path, port: int, args, tmp: str, rng: random.Random) -> dict:
    env = {**os.environ, "TMPDIR": tmp}
    env.pop("GPUDECK_HOME", None)
    cmd = f"{shlex.quote(sys.executable)} -c {shlex.quote(CONSOLE)} {port} {args.output_len} {args.num_prompts}"
    probe = Probe(f"exec {cmd}", env=env, cwd=str(cwd))
    try:
        probe.wait_for(["1 GPUs", GPUDECK_TABS["1"]], time.perf_counter(), timeout=60)
        pid = _app_pid(probe)
        time.sleep(2)
        first = _first_visits(probe, GPUDECK_TABS)
        idle_cpu = _cpu_percent(pid, args.cpu_s)
        idle, switch_cpu = _time_keys_cpu(probe, GPUDECK_TABS, args.keys, rng, pid, idle_cpu)
        probe.send("3")
        probe.wait_for([GPUDECK_TABS["3"]], time.perf_counter())
        time.sleep(1.0)  # the form's models list
        probe.send("r")
        probe.wait_for(["Run a sweep up to"], time.perf_counter())
        probe.send("y")
        probe.wait_for(["■ running", "client lag"], time.perf_counter(), timeout=60)
        time.sleep(2)
        sweep_cpu = _cpu_percent(pid, args.cpu_s)
        sweep = _time_keys(probe, GPUDECK_TABS, args.keys, rng)
        probe.send("3")
        probe.wait_for([GPUDECK_TABS["3"]], time.perf_counter())
        still = "■ running" in probe.screen()
        return {"first": first, "idle": idle, "sweep": sweep, "idle_cpu": idle_cpu, "sweep_cpu": sweep_cpu,
                "still_running": still, "switch_cpu": switch_cpu}
    finally:
        probe.close()


def run_peer(port: int, args, tmp: str, rng: random.Random) -> dict:
    cmd = f"{shlex.quote(sys.executable)} -c {shlex.quote(PEER)}"
    probe = Probe(f"exec {cmd}", cwd=str(ROOT))
    sweep_proc = None
    try:
        probe.wait_for([PEER_TABS["1"]], time.perf_counter(), timeout=60)
        pid = _app_pid(probe)
        time.sleep(2)
        first = _first_visits(probe, PEER_TABS)
        idle_cpu = _cpu_percent(pid, args.cpu_s)
        idle, switch_cpu = _time_keys_cpu(probe, PEER_TABS, args.keys, rng, pid, idle_cpu)
        env = {**os.environ, "GPUDECK_HOME": os.path.join(tmp, "peer-home"), "TMPDIR": tmp}
        sweep_proc = subprocess.Popen(
            [sys.executable, "-m", "console", "bench", "--url", f"http://127.0.0.1:{port}", "--concurrency",
             str(STREAMS), "--input-len", "32", "--output-len", str(args.output_len), "--num-prompts",
             str(STREAMS * int(args.num_prompts.rstrip("c")))],
            cwd=str(ROOT), env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        # past the warm-up request, all streams open
        time.sleep(args.output_len * args.interval_ms / 1000 + 3)
        sweep_cpu = _cpu_percent(pid, args.cpu_s)
        sweep = _time_keys(probe, PEER_TABS, args.keys, rng)
        return {"first": first, "idle": idle, "sweep": sweep, "idle_cpu": idle_cpu, "sweep_cpu": sweep_cpu,
                "still_running": sweep_proc.poll() is None, "switch_cpu": switch_cpu}
    finally:
        if sweep_proc is not None:
            sweep_proc.terminate()
            sweep_proc.wait(timeout=30)
        probe.close()


def _ratio(values: list[float], peer_values: list[float], q: float) -> str:
    """`values` over the peer at quantile q; no ratio when either side has a key never shown there."""
    mine, theirs = pct(values, q), pct(peer_values, q)
    return "n/a" if math.isinf(mine) or math.isinf(theirs) else f"{mine / theirs:.2f}x"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keys", type=int, default=36, help="tab switches timed per phase")
    parser.add_argument("--cpu-s", type=float, default=10.0, help="seconds of CPU reading per phase")
    parser.add_argument("--interval-ms", type=float, default=25.0, help="the source's time between tokens")
    parser.add_argument("--output-len", type=int, default=200, help="tokens per request")
    parser.add_argument("--num-prompts", default="12c", help="requests in the level (Nc: N per stream)")
    parser.add_argument("--base", help="another checkout, timed too (e.g. before a change)")
    parser.add_argument("--serve", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.serve:
        asyncio.run(_serve(args.serve, args.output_len, args.interval_ms / 1000))
        return
    port = _free_port()
    source = subprocess.Popen([sys.executable, __file__, "--serve", str(port), "--output-len", str(args.output_len),
                               "--interval-ms", str(args.interval_ms)], stdout=subprocess.PIPE)
    assert source.stdout.readline().strip() == b"ready"
    kinds = ["gpudeck", "peer"] + (["base"] if args.base else [])
    results: dict[str, list[dict]] = {k: [] for k in kinds}
    rng = random.Random(7)
    try:
        with tempfile.TemporaryDirectory(prefix="gpudeck-tui-keys-") as tmp:
            for rep, order in alternate(kinds, args.repeats):
                for kind in order:
                    if kind == "peer":
                        r = run_peer(port, args, tmp, rng)
                    else:
                        r = run_console(Path(args.base).resolve() if kind == "base" else ROOT, port, args, tmp, rng)
                    results[kind].append(r)
                    print(f"repeat {rep + 1} {kind:8s} first visits max {max(r['first']) * 1000:4.0f} ms · idle p50 {pct(r['idle'], .5) * 1000:5.0f} p99 "
                          f"{pct(r['idle'], .99) * 1000:5.0f} ms · sweep p50 {pct(r['sweep'], .5) * 1000:5.0f} "
                          f"p99 {pct(r['sweep'], .99) * 1000:5.0f} ms · CPU idle {r['idle_cpu']:.1f}% sweep "
                          f"{r['sweep_cpu']:.1f}% · CPU per idle switch {r['switch_cpu'] * 1000:.0f} ms"
                          f"{'' if r['still_running'] else ' (sweep ended early)'}"
                          f" · load {load_average()}", flush=True)
    finally:
        source.terminate()
        source.wait(timeout=10)
    print(f"\ntab-switch key to screen, tmux 160x45, {args.repeats} alternated repeats x {args.keys} keys pooled;"
          f" {STREAMS} streams at {1000 / args.interval_ms * STREAMS:,.0f} tok/s offered:")
    peer = results["peer"]
    for kind, rs in results.items():
        for phase in ("idle", "sweep"):
            values = [v for r in rs for v in r[phase]]
            peer_values = [v for r in peer for v in r[phase]]
            cpu = [r[f"{phase}_cpu"] for r in rs]
            print(f"  {kind:8s} {phase:5s} p50 {pct(values, .5) * 1000:5.0f} ms "
                  f"({_ratio(values, peer_values, .5)} peer)  p99 {pct(values, .99) * 1000:5.0f} ms "
                  f"({_ratio(values, peer_values, .99)} peer)  CPU {statistics.median(cpu):.1f}% "
                  f"({min(cpu):.1f}-{max(cpu):.1f})")
    for kind, rs in results.items():
        first = [v for r in rs for v in r["first"]]
        print(f"  {kind:8s} first visit of each tab: p50 {pct(first, .5) * 1000:5.0f} ms, max {max(first) * 1000:5.0f} ms")
    for kind, rs in results.items():
        per = [r["switch_cpu"] * 1000 for r in rs]
        print(f"  {kind:8s} CPU per idle switch {statistics.median(per):5.1f} ms ({min(per):.1f}-{max(per):.1f})")
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
