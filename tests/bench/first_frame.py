"""`gpudeck demo`'s first frame in a real terminal (tmux 160x45), against a minimal Textual app's.

    .venv/bin/python tests/bench/first_frame.py [--runs 3] [--base DIR]

Each run starts a fresh process in a fresh tmux session, waiting on a shell
`read` so the clock starts at the Enter that launches it; the time is from
that Enter to the end of the output burst after which the screen shows the
tab strip and the footer (tests/bench/tmux_probe.py, tmux control mode).
The peer is a minimal Textual app (a header, one line of text, a footer),
so the ratio is what gpudeck adds to Textual's own start. `--base DIR` also
runs another checkout's demo (the code before a change) in the same
alternation. Runs are alternated; the load average is printed with each.

Figures (2-core VM shared with other jobs, load 2.3-2.4, 2026-12-01; median
(min-max) of 3 alternated runs; "base" is the code before the first-frame work):

    gpudeck demo       487 ms (449-535)     2.26x the minimal app
    minimal Textual    216 ms (214-414)
    base demo         1264 ms (1256-1281)   5.86x

At load 7-9 the same three read 843-1024 ms, about 700 ms and 1963-3456 ms.
2026-12-02, load 0.4-0.8, 3 alternated runs: gpudeck demo 370 ms (368-386), 1.86x the
minimal app's 199 ms (197-201).
What changed: Textual holds every repaint until the app's on_mount returns, and
that used to wait for the five tabs nobody sees yet, every host's runtime and the
roofline; now the first frame goes out first (screens/app.py).
"""
from __future__ import annotations

import argparse
import os
import shlex
import statistics
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _alternate import alternate, load_average, times_peer  # noqa: E402
from tmux_probe import Probe  # noqa: E402

ROOT = Path(__file__).resolve().parents[2]

PEER = r"""
from textual.app import App
from textual.widgets import Footer, Header, Static
class Peer(App):
    BINDINGS = [("q", "quit", "quit")]
    def compose(self):
        yield Header()
        yield Static("1 GPUs  2 Server  3 Bench  4 Roofline  5 Tasks  6 Campaign")
        yield Footer()
Peer().run()
"""

GPUDECK_MARKERS = ["1 GPUs", "6 Campaign", "quit"]
PEER_MARKERS = ["1 GPUs", "6 Campaign", "quit"]


def one(command: str, markers: list[str], cwd: Path, tmp: str) -> float:
    env = {**os.environ, "TMPDIR": tmp, "GPUDECK_HOME": os.path.join(tmp, "home-unused")}
    probe = Probe(f"sh -c {shlex.quote('read x; exec ' + command)}", env=env, cwd=str(cwd))
    try:
        t0 = probe.send("Enter")
        return probe.wait_for(markers, t0, timeout=60)
    finally:
        probe.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--base", help="another checkout whose demo runs too (e.g. before a change)")
    args = parser.parse_args()
    python = shlex.quote(sys.executable)
    kinds = {"gpudeck demo": (f"{python} -m console demo", GPUDECK_MARKERS, ROOT),
             "minimal Textual": (f"{python} -c {shlex.quote(PEER)}", PEER_MARKERS, ROOT)}
    if args.base:
        kinds["base demo"] = (f"{python} -m console demo", GPUDECK_MARKERS, Path(args.base).resolve())
    results: dict[str, list[float]] = {k: [] for k in kinds}
    with tempfile.TemporaryDirectory(prefix="gpudeck-first-frame-") as tmp:
        for run, order in alternate(kinds, args.runs):
            for name in order:
                command, markers, cwd = kinds[name]
                seconds = one(command, markers, cwd, tmp)
                results[name].append(seconds)
                print(f"run {run + 1} {name:16s} {seconds * 1000:7.0f} ms   load {load_average()}", flush=True)
    print("\nfirst frame in tmux 160x45, median (min-max) of", args.runs, "alternated runs:")
    for name, values in results.items():
        print(f"  {name:16s} {statistics.median(values) * 1000:6.0f} ms ({min(values) * 1000:.0f}-"
              f"{max(values) * 1000:.0f})   {times_peer(values, results['minimal Textual']):.2f}x the minimal app")
    print(f"load average at the end: {load_average()}")


if __name__ == "__main__":
    main()
