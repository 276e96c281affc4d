"""Feed a level's requests to the server: closed loop (fixed concurrency) or open loop (a request rate).

Closed loop: `concurrency` coroutines take the next prompt from one list,
the effect of a semaphore over all prompts without thousands of waiting
tasks.

Open loop: requests are due at arrival times drawn up front (`arrivals`),
whether or not earlier ones have finished. With a concurrency cap a due
request waits for a free slot; that wait is the client's queue time, kept
apart from the server's TTFT.

Cancelling the drive ends the open requests; their records still reach
`on_record`. Once the client sees the server hung, nothing more is sent.
"""
from __future__ import annotations

import asyncio
import math
import random
import time
from typing import Callable

from .client import HUNG, STOPPED, StreamClient
from .metrics import RequestRecord


def arrivals(count: int, rate: float, burstiness: float = 1.0, seed: int = 0,
             ramp: tuple[str, float, float] | None = None) -> list[float]:
    """Seconds from the level's start at which each request is due.

    The gaps follow vLLM's serving benchmark: gamma-distributed with shape
    `burstiness` and mean 1/rate (burstiness 1 is a Poisson process; below
    1 burstier, above 1 more even, infinite: constant). Without a ramp the times are scaled so
    the last one falls at count/rate. `ramp` is (strategy, start_rps,
    end_rps): the rate for request i moves from start to end, linearly or
    exponentially, with i/(count-1).
    """
    rng = random.Random(seed)
    delays: list[float] = []
    for i in range(count):
        current = rate
        if ramp is not None:
            strategy, start, end = ramp
            progress = i / max(count - 1, 1)
            current = start + (end - start) * progress if strategy == "linear" \
                else start * (end / start) ** progress
        if math.isinf(current) or current <= 0:
            delays.append(0.0)
        elif math.isinf(burstiness):  # infinitely even: a constant gap
            delays.append(1.0 / current)
        else:
            delays.append(rng.gammavariate(burstiness, 1.0 / (current * burstiness)))
    total = 0.0
    times = []
    for d in delays:
        total += d
        times.append(total)
    if ramp is None and times and times[-1] > 0 and not math.isinf(rate):
        scale = (count / rate) / times[-1]
        times = [t * scale for t in times]
    return times


async def drive(client: StreamClient, bodies: list[tuple[int, bytes]], concurrency: int,
                on_record: Callable[[RequestRecord], None], *, schedule: list[float] | None = None) -> None:
    """Closed loop at `concurrency`, or open loop on `schedule` (capped at `concurrency` when > 0)."""
    if schedule is not None:
        await _open_loop(client, bodies, concurrency, on_record, schedule)
        return
    queue = list(reversed(bodies))

    async def worker() -> None:
        while queue:
            index, body = queue.pop()
            record = await client.send(index, body)
            on_record(record)
            if record.error == STOPPED or client.hung:
                return

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(bodies)))]
    try:
        await asyncio.shield(asyncio.gather(*workers))
    except asyncio.CancelledError:
        queue.clear()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)


async def _open_loop(client: StreamClient, bodies: list[tuple[int, bytes]], cap: int,
                     on_record: Callable[[RequestRecord], None], schedule: list[float]) -> None:
    gate = asyncio.Semaphore(cap) if cap and cap > 0 else None
    tasks: set[asyncio.Task] = set()

    async def one(index: int, body: bytes, due: float) -> None:
        if gate is None:
            on_record(await client.send(index, body, queued_since=due))
            return
        async with gate:
            if client.hung:
                return
            on_record(await client.send(index, body, queued_since=due))

    start = time.perf_counter()
    try:
        for (index, body), at in zip(bodies, schedule):
            wait = start + at - time.perf_counter()
            if wait > 0:
                await asyncio.sleep(wait)
            if client.hung:
                break
            task = asyncio.create_task(one(index, body, start + at))
            tasks.add(task)
            task.add_done_callback(tasks.discard)
        if tasks:
            await asyncio.shield(asyncio.gather(*tasks))
    except asyncio.CancelledError:
        for task in list(tasks):
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)


__all__ = ["arrivals", "drive", "HUNG"]
