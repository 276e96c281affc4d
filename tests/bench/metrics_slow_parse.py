"""Console CPU and threads while the runtime polls a `/metrics` page that is slow to parse.

Runs the host runtime's poll loop (console/runtime/metrics_poll.py, its 3 s deadline,
one poll a second) for a window against tests/prom_peer.py serving one of two pages:
`many-lines`, 120 lines of 64 KB of escaped quotes (each line about 40 ms to parse),
and `one-line`, a single 7 MB line of them (minutes to parse). Prints the polls, this
process's CPU over the window and its thread count (at the start, the most, at the
end; the peer's own threads are among them, one or two).

    .venv/bin/python tests/bench/metrics_slow_parse.py many-lines [--seconds 20]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import threading
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def page(kind: str) -> bytes:
    if kind == "one-line":
        return ('vllm:num_requests_running{a="' + '\\"' * 3_500_000 + '"} 1\n').encode()
    escapes = '\\"' * 32_700
    return "".join(f'vllm:num_requests_running{{a="{escapes}",n="{i}"}} 1\n' for i in range(120)).encode()


async def measure(kind: str, seconds: float) -> None:
    from console.hosts.local import LocalHost
    from console.runtime.metrics_poll import poll_metrics
    from tests.prom_peer import PromPeer

    peer = PromPeer()
    peer.answers["/metrics"] = page(kind)
    record = SimpleNamespace(id="bench", config="bench", state="ready", port=int(peer.url.rsplit(":", 1)[1]))
    end = time.monotonic() + seconds
    start_threads = most = threading.active_count()
    polls: list = []

    async def watch() -> None:
        nonlocal most
        while time.monotonic() < end:
            most = max(most, threading.active_count())
            await asyncio.sleep(0.1)
    cpu, began = time.process_time(), time.monotonic()
    await asyncio.gather(watch(), poll_metrics(LocalHost(), "bench", record, lambda: time.monotonic() < end,
                                               polls.append, 1.0))
    cpu = time.process_time() - cpu
    print(f"{kind}: {seconds:g} s, polls {len(polls)}, CPU {cpu:.1f} s ({100 * cpu / (time.monotonic() - began):.0f}% "
          f"of a core), threads {start_threads} at the start, {most} at most, {threading.active_count()} at the end",
          flush=True)
    peer.close()
    os._exit(0)  # parse threads the old poll left running would hold the interpreter for minutes


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("kind", choices=["many-lines", "one-line"])
    parser.add_argument("--seconds", type=float, default=20.0)
    args = parser.parse_args()
    asyncio.run(measure(args.kind, args.seconds))


if __name__ == "__main__":
    main()
