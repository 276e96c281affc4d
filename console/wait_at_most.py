"""Await something for at most a time, without ever losing a cancel.

On Python 3.11 `asyncio.wait_for` returns the awaited result when a cancel lands in
the same loop step as the result (the event set, the line read): the cancel is
dropped and a loop that was told to stop goes round again. A sweep's GPU sampler
was seen alive for minutes after its run was saved that way. `asyncio.timeout`
keeps the cancel; this is it in the one shape the engine's waiting loops need.
"""
from __future__ import annotations

import asyncio
from typing import Awaitable


async def wait_at_most(awaitable: Awaitable[object], seconds: float) -> bool:
    """True when `awaitable` finished within `seconds`, False when the time ran out; a cancel
    of the caller always propagates."""
    try:
        async with asyncio.timeout(max(0.0, seconds)):
            await awaitable
        return True
    except TimeoutError:
        return False
