"""Sane maxima for what a sweep or a campaign may ask for, in one place.

A value past one of these is a typo or an attack (10^11 streams, a 10^6-cell
grid), never a measurement anyone meant: it is refused with one line before
anything is allocated, launched or written. Campaigns check them in
`console.campaign.spec`; the bench's own options can use the same numbers.
"""
from __future__ import annotations

MAX_CONCURRENCY = 100_000        # streams at one level
MAX_LEVELS = 64                  # concurrency levels in one sweep
MAX_TOKENS = 10_000_000          # input or output length of one request, in tokens
MAX_PROMPTS = 1_000_000          # requests in one level (num_prompts, or per stream x concurrency)
MAX_PROMPTS_PER_STREAM = 10_000

MAX_CELLS = 1_000                # cells in one campaign unless its file or `--max-cells` raises it
MAX_CELLS_CEILING = 10_000       # the most any campaign may raise it to (its state stays well under the cap below)
MAX_GRID_FLAGS = 16              # flags one grid varies
MAX_GRID_VALUES = 1_000          # values one grid flag takes
MAX_CONFIGS = 1_000              # [[config]] entries

MAX_CAMPAIGN_FILE_BYTES = 1 << 20        # a campaign TOML file
MAX_STATE_FILE_BYTES = 64 << 20          # a campaign's state.json
MAX_NOTE_CHARS = 2_000                   # a note kept or shown for a campaign or a cell
