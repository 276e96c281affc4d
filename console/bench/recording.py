"""What the sweep writes into its run's timeline (console.store.timeline), from what it already measures.

Nothing here measures anything new: the request records, the per-second
ticks and the /metrics scrapes the sweep takes anyway are placed on the
run's one clock. Each call is a few appends, off the streaming hot loop.
"""
from __future__ import annotations

from console.gpus.ranges import physical
from console.store.timeline import TimelineWriter

from .metrics import RequestRecord
from .prom import ServerSample


def request(tl: TimelineWriter, level: int, record: RequestRecord) -> None:
    """One request: its send, first token and last token on the run's clock (None when it had none)."""
    if not record.start:
        return
    first = tl.t(record.start + record.ttft) if record.ttft is not None else None
    end = tl.t(record.start + record.e2el) if record.e2el is not None else None
    tl.add("requests", tl.t(record.start), first, end, record.output_tokens, record.ok, level)
    if not record.ok and record.failed_at and level not in tl.failed_levels:
        tl.failed_levels.add(level)   # the level's first failure: where a death shows on the timeline
        tl.mark(tl.t_of_wall(record.failed_at), "first failure", record.error or "failed", level)


def tick(tl: TimelineWriter, level: int, tokens: int, span_s: float, in_flight: int) -> None:
    """The client's second: output tokens per second and the requests in flight at its end."""
    rate = round(tokens / span_s, 3) if span_s > 0 else None
    tl.add("client", tl.now(), level, rate, in_flight)


def server(tl: TimelineWriter, view: dict, sample: ServerSample, sent: float) -> None:
    """One /metrics reading: when it was asked for and when it came back."""
    tl.add("server", tl.t(sent), tl.now(), view.get("running"), view.get("queued"), view.get("kv_cache"),
           physical("gen_tokens_total", sample.preemptions), view.get("gen_tps"))
