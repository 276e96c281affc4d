"""The largest load gpudeck will generate: one place, so `bench` and campaigns refuse the same sizes.

Without caps `--concurrency 100000000000` or `input_len=1e11` ran the client
into a MemoryError after minutes, deaf to SIGTERM the while. These maxima are
far above any real server's (the largest deployments run a few thousand
streams) and low enough that building a level's prompts takes seconds and
fits in memory. `problem()` returns the one line that refuses a value, or
None; campaigns check their grids with the same function.
"""
from __future__ import annotations

import math

MAX_CONCURRENCY = 10_000            # streams in flight in one level (also --max-concurrency)
MAX_LEVELS = 64                     # levels (concurrencies or rates) in one sweep
MAX_INPUT_LEN = 1_048_576           # prompt tokens (a 1M-token context)
MAX_OUTPUT_LEN = 1_048_576          # output tokens per request
MAX_PROMPTS = 1_000_000             # requests in one level
MAX_PROMPT_TOKENS = 100_000_000     # prompts x input length in one level: what the client holds in memory
MAX_WARMUP = 1_000                  # untimed requests before a level
MAX_WORKERS = 64                    # client processes per level
MAX_SECONDS = 7 * 86_400            # any timeout or stall limit
MAX_REQUEST_RATE = 1_000_000.0      # requests per second of an open loop (inf: all at once is allowed)
MAX_DATASET_BYTES = 4 << 30         # a dataset file (read as a stream: memory follows what is kept)
MAX_DATASET_ITEM_CHARS = 64 << 20   # one JSONL line or one ShareGPT conversation

LIMITS = {
    "concurrency": MAX_CONCURRENCY, "max-concurrency": MAX_CONCURRENCY, "input-len": MAX_INPUT_LEN,
    "output-len": MAX_OUTPUT_LEN, "num-prompts": MAX_PROMPTS, "prompts-per-stream": MAX_PROMPTS,
    "warmup": MAX_WARMUP, "workers": MAX_WORKERS, "timeout": MAX_SECONDS, "stall-timeout": MAX_SECONDS,
    "shared-prefix-len": MAX_INPUT_LEN, "levels": MAX_LEVELS, "request-rate": MAX_REQUEST_RATE,
}


def problem(name: str, value: float | None) -> str | None:
    """Why `value` is too large for `name` (a key of LIMITS), or None when it is within the cap."""
    if value is None:
        return None
    cap = LIMITS[name]
    if isinstance(value, float) and math.isinf(value) and name == "request-rate":
        return None
    if value > cap and name == "levels":
        return f"{_shown(value)} levels in one sweep is above gpudeck's limit of {_shown(cap)}"
    if value > cap:
        return f"--{name} {_shown(value)} is above gpudeck's limit of {_shown(cap)}"
    return None


def level_problem(prompts: int, input_len: int) -> str | None:
    """A level whose prompts would not fit: prompts x input length over MAX_PROMPT_TOKENS."""
    if prompts * input_len > MAX_PROMPT_TOKENS:
        return (f"{prompts:,} prompts of {input_len:,} tokens in one level is above gpudeck's limit of "
                f"{MAX_PROMPT_TOKENS:,} prompt tokens per level (lower --num-prompts or --input-len)")
    return None


def _shown(value: float) -> str:
    if isinstance(value, float) and not value.is_integer():
        return f"{value:,g}"
    return f"{int(value):,}" if abs(value) < 1e15 else f"{value:g}"
