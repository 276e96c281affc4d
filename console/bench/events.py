"""The JSON-lines protocol the load generator speaks on stdout.

One JSON object per line, each with an "event" key:

- run-start   {run_id, url (the server's, also behind a tunnel), model, api, workload,
               levels: [c, ...] (the concurrency; null for a rate level),
               level_labels: ["c=64", "4/s ≤64", ...], tunnelled}
- level-start {level, concurrency (null for a rate level), num_prompts, warmup,
               workers (client processes), time, request_rate and max_concurrency
               (null for a closed loop), label}
- tick        {level, concurrency, second, output_tokens, in_flight, completed,
               failed, lag_ms (the worst event-loop lag of that second),
               live: {ttft_p50, ttft_p99, tpot_p50, tpot_p99},
               server: {gen_tps, running, queued, kv_cache} | null}
               (gen_tps is null where the server's token counter moves only
               when requests finish: llama.cpp)
               The level's last tick has `final: true` and `span_s`: the
               part-second since the last whole one (every level has one).
- request     {level, index, ok, ttft_ms, tpot_ms, e2el_ms, output_tokens,
               input_tokens, error, queue_ms (open loop: due to sent)}
- level-end   {level, concurrency, summary: <one level of the --json document>}
               (its `server`: the whole level, console/bench/prom.level_view)
- error       {message, level (or null)}
- run-end     {status ("not started" when the server was not ready), exit_code,
               path (the saved run, or null)}

`second` counts from the level's first request; `output_tokens` in a tick is
the tokens that arrived during that second. Readers ignore unknown keys and
unknown events, so the protocol can grow.
"""
from __future__ import annotations

import json
import sys
from typing import IO, Any, Callable

KINDS = ("run-start", "level-start", "tick", "request", "level-end", "error", "run-end")

Emit = Callable[[dict], None]


def make(kind: str, **fields: Any) -> dict:
    if kind not in KINDS:
        raise ValueError(f"unknown event {kind!r}")
    return {"event": kind, **fields}


def line_writer(stream: IO[str] | None = None) -> Emit:
    """An emitter writing one compact JSON line per event and flushing it."""
    out = stream or sys.stdout

    def emit(event: dict) -> None:
        out.write(json.dumps(event, separators=(",", ":"), default=str))
        out.write("\n")
        out.flush()

    return emit


def discard(event: dict) -> None:
    """The emitter used when nobody is listening."""


def parse_line(line: str | bytes) -> dict | None:
    """One event from one line; None for blank lines or anything not an event."""
    line = line.strip()
    if not line:
        return None
    try:
        doc = json.loads(line)
    except ValueError:
        return None
    if not isinstance(doc, dict) or not isinstance(doc.get("event"), str):
        return None
    return doc
