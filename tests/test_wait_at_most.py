"""A wait that is cancelled at the moment it would have ended still ends: the cancel is never
lost (Python 3.11's asyncio.wait_for returns the result instead, and a waiting loop goes on)."""
from __future__ import annotations

import asyncio

import pytest

from console.gpus.sampler import Sampler
from console.hosts import LocalHost
from console.wait_at_most import wait_at_most


async def _cancel_as_it_wakes(event: asyncio.Event, task: asyncio.Task) -> None:
    for _ in range(3):          # the task is parked on the event
        await asyncio.sleep(0)
    event.set()                 # the wake and the cancel land in the same step of the loop
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_a_cancel_that_lands_with_the_wake_is_kept():
    event = asyncio.Event()
    await _cancel_as_it_wakes(event, asyncio.create_task(wait_at_most(event.wait(), 30)))


async def test_it_says_whether_the_wait_ended_or_timed_out():
    event = asyncio.Event()
    assert await wait_at_most(event.wait(), 0.01) is False
    event.set()
    assert await wait_at_most(event.wait(), 30) is True


async def test_the_samplers_process_list_wait_stops_when_cancelled_at_its_wake_up():
    sampler = Sampler(LocalHost(), 1.0)
    task = asyncio.create_task(sampler._apps_wait(30))
    await _cancel_as_it_wakes(sampler._apps_wakeup, task)
