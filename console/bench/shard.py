"""Sharding one level across worker processes, when one client process can't keep up.

The parent sends each worker its share of the prompts and of the
concurrency, waits until every worker is ready, then says "go" to all and
times the level from there. Workers (`python -m console.bench.shard`) speak
compact JSON lines back: `live` (cumulative tokens, requests in flight) twice
a second, `rec` per finished request with its chunk times, and `done` with
their own event-loop lag. SIGTERM stops a worker; it still reports every
request it started.
"""
from __future__ import annotations

import asyncio
import json
import math
import os
import signal
import sys
import time
from typing import Callable

from .client import Live, StreamClient
from .metrics import RequestRecord, percentile

SHARD_FROM = 256            # never shard below this many streams
LAG_LIMIT_MS = 25.0         # a previous level this late means one process is not keeping up


def plan_workers(concurrency: int, requested: int | None, previous_lag_p99_ms: float | None) -> int:
    """How many processes a level gets: the operator's number, else 1 unless the client lagged."""
    if requested:
        return max(1, min(requested, concurrency))
    if concurrency < SHARD_FROM or previous_lag_p99_ms is None or previous_lag_p99_ms <= LAG_LIMIT_MS:
        return 1
    return max(2, min(os.cpu_count() or 1, math.ceil(concurrency / SHARD_FROM)))


class ShardedLevel:
    """Runs one level in `workers` processes; looks like an in-process drive to the runner."""

    def __init__(self, url: str, api: str, timeout_s: float | None, stall_s: float,
                 bodies: list[tuple[int, bytes]], concurrency: int, workers: int,
                 on_record: Callable[[RequestRecord], None], headers: dict | None = None):
        self.url, self.api, self.timeout_s, self.stall_s = url, api, timeout_s, stall_s
        self.headers = headers
        self.bodies = bodies
        self.concurrency = concurrency
        self.workers = workers
        self.on_record = on_record
        self.live = Live()
        self.worker_lag_ms: list[dict] = []
        self._latest: dict[int, tuple[int, int]] = {}
        self.start = 0.0

    async def run(self) -> None:
        procs = []
        for w in range(self.workers):
            share = self.bodies[w::self.workers]
            conc = self.concurrency // self.workers + (1 if w < self.concurrency % self.workers else 0)
            proc = await asyncio.create_subprocess_exec(
                sys.executable, "-m", "console.bench.shard", stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE, limit=2**24)
            job = {"url": self.url, "api": self.api, "timeout_s": self.timeout_s, "stall_s": self.stall_s,
                   "concurrency": conc, "headers": self.headers, "bodies": [[i, b.decode()] for i, b in share]}
            proc.stdin.write(json.dumps(job).encode() + b"\n")
            await proc.stdin.drain()
            procs.append(proc)
        for proc in procs:
            await proc.stdout.readline()  # "ready"
        self.start = time.perf_counter()
        for proc in procs:
            proc.stdin.write(b"go\n")
            await proc.stdin.drain()
        readers = asyncio.gather(*(self._read(w, proc) for w, proc in enumerate(procs)))
        try:
            await asyncio.shield(readers)
        except asyncio.CancelledError:
            for proc in procs:
                if proc.returncode is None:
                    proc.send_signal(signal.SIGTERM)
            await readers
            raise
        finally:
            for proc in procs:
                await proc.wait()

    async def _read(self, w: int, proc) -> None:
        async for line in proc.stdout:
            msg = json.loads(line)
            kind = msg.get("k")
            if kind == "live":
                self._latest[w] = (msg["tokens"], msg["in_flight"])
                self.live.tokens = sum(t for t, _ in self._latest.values())
                self.live.in_flight = sum(f for _, f in self._latest.values())
            elif kind == "rec":
                self.on_record(_record_from(msg, self.start))
            elif kind == "done":
                self.worker_lag_ms.append(msg["lag_ms"])
                self._latest[w] = (msg["tokens"], 0)
                self.live.tokens = sum(t for t, _ in self._latest.values())
                self.live.in_flight = sum(f for _, f in self._latest.values())


def _record_from(msg: dict, parent_start: float) -> RequestRecord:
    return RequestRecord(index=msg["i"], ok=msg["ok"], start=parent_start + msg["s"], chunk_times=msg["t"],
                         output_tokens=msg["o"], output_tokens_from=msg["f"], input_tokens=msg["n"],
                         error=msg["e"], failed_at=msg["x"], server_tpot_ms=msg["p"])


# ---------------------------------------------------------------- the worker side


async def _worker_main() -> None:
    from .drive import drive

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader(limit=2**28)
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    job = json.loads(await reader.readline())
    bodies = [(i, b.encode()) for i, b in job["bodies"]]
    out = sys.stdout

    def send(doc: dict) -> None:
        out.write(json.dumps(doc, separators=(",", ":")) + "\n")
        out.flush()

    async with StreamClient(job["url"], job["api"], timeout_s=job["timeout_s"], stall_s=job["stall_s"],
                            headers=job.get("headers")) as client:
        send({"k": "ready"})
        await reader.readline()
        start = time.perf_counter()
        lag: list[float] = []

        def on_record(r: RequestRecord) -> None:
            send({"k": "rec", "i": r.index, "ok": r.ok, "s": r.start - start, "t": r.chunk_times,
                  "o": r.output_tokens, "f": r.output_tokens_from, "n": r.input_tokens, "e": r.error,
                  "x": r.failed_at, "p": r.server_tpot_ms})

        async def report() -> None:
            while True:
                before = time.perf_counter()
                await asyncio.sleep(0.1)
                lag.append(max(0.0, time.perf_counter() - before - 0.1))
                if len(lag) % 5 == 0:
                    send({"k": "live", "tokens": client.live.tokens, "in_flight": client.live.in_flight})

        reporter = asyncio.create_task(report())
        main = asyncio.create_task(drive(client, bodies, job["concurrency"], on_record))
        loop.add_signal_handler(signal.SIGTERM, main.cancel)
        loop.add_signal_handler(signal.SIGINT, lambda: None)  # the parent decides when to stop
        try:
            await main
        except asyncio.CancelledError:
            pass
        reporter.cancel()
        data = sorted(lag)
        send({"k": "done", "tokens": client.live.tokens,
              "lag_ms": {"p99": percentile(data, 99) * 1000 if data else None,
                         "max": data[-1] * 1000 if data else None}})


if __name__ == "__main__":
    from .loop import run

    run(_worker_main())
