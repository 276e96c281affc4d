"""The event loop a sweep's client runs on: uvloop where installed, else asyncio with coalesced wake-ups.

With hundreds of streams open, one token on each arrives spread over the
source's interval, and a plain loop wakes for nearly every one of them: most
of the client's CPU goes to polling, not to reading. Sleeping a moment before
polling lets the reads that arrive meanwhile be handled in one wake-up.

That delay bounds how late a chunk can be stamped, so it is the client's
timestamp resolution, and every run records it (`clock_info`): an ITL
measured to 1 ms is not claimed to be finer. Below `COALESCE_FROM` open
sockets nothing is delayed (one stream's chunks each wake the loop anyway).

uvloop is optional: when importable it is used as is (its own polling is
cheaper than the coalescing gains) and the resolution is the clock's.
"""
from __future__ import annotations

import asyncio
import selectors
import time
from typing import Any, Coroutine

COALESCE_S = 0.001        # the longest a ready read waits for company
COALESCE_FROM = 64        # registered sockets before any wait is added


class CoalescingSelector(selectors.DefaultSelector):  # type: ignore[misc,valid-type]
    """A selector that, with many sockets registered, waits `delay_s` before polling.

    A poll that would not block (timeout 0: callbacks are ready to run) never
    waits, and the wait never runs past the poll's own timeout, so timers fire
    on time.
    """

    def __init__(self, delay_s: float = COALESCE_S, from_fds: int = COALESCE_FROM):
        super().__init__()
        self.delay_s = delay_s
        self.from_fds = from_fds

    def select(self, timeout: float | None = None):
        delay = self.delay_s
        if delay > 0 and (timeout is None or timeout > 0) and len(self.get_map()) >= self.from_fds:
            if timeout is not None and timeout < delay:
                delay = timeout
            time.sleep(delay)
            timeout = None if timeout is None else timeout - delay
        return super().select(timeout)


def _uvloop():
    try:
        import uvloop  # type: ignore[import-not-found]
    except ImportError:
        return None
    return uvloop


def new_loop(coalesce_s: float = COALESCE_S, use_uvloop: bool = True) -> asyncio.AbstractEventLoop:
    """uvloop when installed (and wanted); else a selector loop that coalesces wake-ups."""
    uvloop = _uvloop() if use_uvloop else None
    if uvloop is not None:
        return uvloop.new_event_loop()
    return asyncio.SelectorEventLoop(CoalescingSelector(coalesce_s))


def clock_info(loop: asyncio.AbstractEventLoop | None = None) -> dict:
    """How finely this process stamps chunks: the clock's resolution plus any coalescing delay."""
    loop = loop or asyncio.get_running_loop()
    clock = time.get_clock_info("perf_counter").resolution
    selector = getattr(loop, "_selector", None)
    delay = selector.delay_s if isinstance(selector, CoalescingSelector) else 0.0
    kind = "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
    return {"loop": kind, "coalesce_ms": round(delay * 1000, 3),
            "resolution_ms": round((clock + delay) * 1000, 6)}


def run(coro: Coroutine[Any, Any, Any], coalesce_s: float = COALESCE_S, use_uvloop: bool = True) -> Any:
    """asyncio.run on the sweep's loop."""
    with asyncio.Runner(loop_factory=lambda: new_loop(coalesce_s, use_uvloop)) as runner:
        return runner.run(coro)
