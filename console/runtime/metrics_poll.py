"""A live launch's own `/metrics`, read about once a second for as long as it lives.

The Server tab shows the server's view of itself (running and waiting requests,
KV-cache use, preemptions, its TTFT/ITL means) beside what gpudeck measures. The
host runtime reads it here, through the profile's SSH tunnel for a remote host and
with the same reader as `server status` (live_metrics.PageReader), and hands every
poll on as a `ServerMetricsSampled` event, so no pane does I/O. One reader per
launch: one request and one parse at a time, each read bounded in time
(REQUEST_S, from connecting to the page parsed) and bytes (live_metrics.MAX_PAGE).
It polls whether or not the host is on screen: about 3 ms of CPU per poll for
llama.cpp's page, 6-8 ms for vLLM's (tests/bench/metrics_poll_cpu.py), under 1%
of a core per live server.
"""
from __future__ import annotations

import asyncio
import time
from typing import Callable

from . import events as ev

REQUEST_S = 3.0      # one read, from connecting to its page parsed
STALE_POLLS = 3      # a reading older than this many polls (plus one read's time) is stale
NO_SERIES = "/metrics has no vllm:, sglang: or llamacpp: series"


async def poll_metrics(host, profile: str, record, alive: Callable[[], bool],
                       emit: Callable[[ev.RuntimeEvent], None], interval_s: float = 1.0) -> None:
    """Read `record`'s /metrics every `interval_s` while `alive()` and it is ready, emitting
    each poll; when it ends, one last event marks the last reading stale (the server ended).

    `record` is the monitor's own LaunchRecord, whose state the monitor keeps current."""
    from ..hosts import HostError
    from ..servers.live_metrics import LiveMetrics, PageReader

    stale_after = STALE_POLLS * interval_s + REQUEST_S
    last: LiveMetrics | None = None
    taken_at: float | None = None
    polled = False

    def send(stale: bool, error: str | None) -> None:
        emit(ev.ServerMetricsSampled(profile, record.id, record.config, last, taken_at, time.time(),
                                     stale, error, stale_after))

    async with PageReader(REQUEST_S) as reader:
        while alive():
            if record.state != "ready" or not record.port:
                await asyncio.sleep(interval_s)
                continue
            started = time.monotonic()
            try:  # the SSH connection and its tunnel, under the host's own time limits and backoff:
                local = await host.forward_port(record.port)  # cutting a connect short would fail it
            except (HostError, OSError) as exc:
                found = f"host not reachable: {type(exc).__name__}"
            else:
                found = await reader.read(local)
            if not alive():
                break  # it ended while we read: the last event below says so
            polled = True
            if isinstance(found, LiveMetrics) and found.server is not None:
                last, taken_at = found, time.time()
                send(False, None)
            else:
                send(True, found if isinstance(found, str) else NO_SERIES)
            await asyncio.sleep(max(0.0, interval_s - (time.monotonic() - started)))
    if polled:
        send(True, f"server {record.state}")
