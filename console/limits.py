"""Sane maxima for what a campaign may ask for, in one place.

A value past one of these is a typo or an attack (10^11 streams, a 10^6-cell
grid), never a measurement anyone meant: it is refused with one line before
anything is allocated, launched or written. Campaigns check them in
`console.campaign.spec`. The load a sweep may generate is capped once, in
`console.bench.limits`: a campaign's sweep refuses exactly what `bench` refuses.
"""
from __future__ import annotations

from .bench.limits import MAX_INPUT_LEN, MAX_OUTPUT_LEN

MAX_TOKENS = max(MAX_INPUT_LEN, MAX_OUTPUT_LEN)   # input or output length of one request, in tokens
MAX_PROMPTS_PER_STREAM = 10_000

MAX_CELLS = 1_000                # cells in one campaign unless its file or `--max-cells` raises it
MAX_CELLS_CEILING = 10_000       # the most any campaign may raise it to (its state stays well under the cap below)
MAX_GRID_FLAGS = 16              # flags one grid varies
MAX_GRID_VALUES = 1_000          # values one grid flag takes
MAX_CONFIGS = 1_000              # [[config]] entries

MAX_CAMPAIGN_FILE_BYTES = 1 << 20        # a campaign TOML file
MAX_STATE_FILE_BYTES = 64 << 20          # a campaign's state.json
MAX_NOTE_CHARS = 2_000                   # a note kept or shown for a campaign or a cell
