"""Hold `concurrency` requests in flight until the prompts run out.

`concurrency` coroutines take the next prompt from one list: the effect of
a semaphore over all prompts, without thousands of waiting tasks. Cancelling
the drive ends the open requests; their records still reach `on_record`.
"""
from __future__ import annotations

import asyncio
from typing import Callable

from .client import STOPPED, StreamClient
from .metrics import RequestRecord


async def drive(client: StreamClient, bodies: list[tuple[int, bytes]], concurrency: int,
                on_record: Callable[[RequestRecord], None]) -> None:
    queue = list(reversed(bodies))

    async def worker() -> None:
        while queue:
            index, body = queue.pop()
            record = await client.send(index, body)
            on_record(record)
            if record.error == STOPPED:
                return

    workers = [asyncio.create_task(worker()) for _ in range(min(concurrency, len(bodies)))]
    try:
        await asyncio.shield(asyncio.gather(*workers))
    except asyncio.CancelledError:
        queue.clear()
        for task in workers:
            task.cancel()
        await asyncio.gather(*workers, return_exceptions=True)
        raise
