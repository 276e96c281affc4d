"""The Server tab's line of what a running server says of itself on its `/metrics`.

Plain data in (a `ServerMetricsSampled` event and the time now), Rich text out:
`sglang /metrics · running 3 · waiting 0 · KV 41% · preempt 0 · TTFT 182 ms · ITL 21 ms`.
A field the server does not expose reads N/A (never 0); a reading the runtime could
not renew, or older than the event's `stale_after_s`, is marked STALE with its time.
"""
from __future__ import annotations

from rich.text import Text

from console.fmt import UNKNOWN, clock, number
from console.safe_text import safe_text


def _ms(value: float | None) -> str:
    return number(value, 1 if value is not None and value < 10 else 0, " ms")


def is_stale(event, now: float) -> bool:
    return event.stale or event.taken_at is None or now - event.taken_at > event.stale_after_s


def metrics_fields(metrics) -> str:
    """`running 3 · waiting 0 · KV 41% · preempt 0 · TTFT 182 ms · ITL 21 ms` (N/A where unknown)."""
    if metrics is None:
        return " · ".join(f"{name} {UNKNOWN}" for name in ("running", "waiting", "KV", "preempt", "TTFT", "ITL"))
    kv = metrics.kv_cache_usage
    return (f"running {number(metrics.running, 0)} · waiting {number(metrics.waiting, 0)} · "
            f"KV {number(None if kv is None else kv * 100, 0, '%')} · preempt {number(metrics.preemptions, 0)} · "
            f"TTFT {_ms(metrics.ttft_mean_ms)} · ITL {_ms(metrics.itl_mean_ms)}")


def metrics_line(event, now: float, simulated: bool = False) -> Text:
    """The whole line for one launch's latest poll."""
    metrics = event.metrics
    family = metrics.server if metrics is not None else None
    line = Text()
    line.append(f"{family or 'server'} /metrics", style="bold")
    if simulated:
        line.append(" SIMULATED", style="bold magenta")
    line.append(" · ")
    line.append(metrics_fields(metrics), style="grey50" if is_stale(event, now) else "")
    if is_stale(event, now):
        line.append("  STALE", style="bold yellow")
        line.append(f" read {clock(event.taken_at)}" if event.taken_at is not None else " never read")
        if event.error:
            line.append_text(safe_text(f" · {event.error}", style="yellow"))
    return line
