"""The event loop a sweep's client runs on: uvloop where installed, else asyncio's own.

At hundreds of streams most of the client's CPU is the event loop's read
path, not gpudeck's parsing; uvloop's is cheaper (tests/bench/client_cpu.py:
a fifth less client CPU at 256 and 512 paced streams). It stays an
optional dependency (`pip install '.[fast]'`); without it nothing changes.

Every run records how finely its chunks were stamped (`clock_info`), so an
ITL is never read as finer than the client's clock.

Tried and left out: sleeping 1 ms before each poll so that reads arriving
meanwhile share one wake-up. Against the bench's local source (tokens sent to
all streams at once, or spread over the interval) it saved no CPU, within
the spread of three alternated runs, and it would have coarsened every
timestamp to 1 ms.
"""
from __future__ import annotations

import asyncio
import time
from typing import Any, Coroutine


def _uvloop():
    try:
        import uvloop  # type: ignore[import-not-found]
    except ImportError:
        return None
    return uvloop


def new_loop(use_uvloop: bool = True) -> asyncio.AbstractEventLoop:
    """uvloop when installed (and wanted); else asyncio's default loop."""
    uvloop = _uvloop() if use_uvloop else None
    if uvloop is not None:
        return uvloop.new_event_loop()
    return asyncio.new_event_loop()


def clock_info(loop: asyncio.AbstractEventLoop | None = None) -> dict:
    """Which loop stamps the chunks and how finely (the clock's resolution, in ms)."""
    loop = loop or asyncio.get_running_loop()
    kind = "uvloop" if type(loop).__module__.startswith("uvloop") else "asyncio"
    return {"loop": kind, "clock": "perf_counter",
            "resolution_ms": time.get_clock_info("perf_counter").resolution * 1000}


def run(coro: Coroutine[Any, Any, Any], use_uvloop: bool = True) -> Any:
    """asyncio.run on the sweep's loop."""
    with asyncio.Runner(loop_factory=lambda: new_loop(use_uvloop)) as runner:
        return runner.run(coro)
