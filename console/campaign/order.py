"""The order a campaign visits its cells: repeats interleaved, each round rotated (A B C, C A B, B C A, ...).

Load, clocks and caches drift over a campaign. Visiting every config once per
round, and starting each round one place later, spreads that drift over every
config alike instead of handing it all to the last one.
"""
from __future__ import annotations

from typing import Sequence, TypeVar

T = TypeVar("T")


def round_order(items: Sequence[T], round_index: int) -> list[T]:
    """The items as round `round_index` visits them: rotated right by the round's number."""
    if not items:
        return []
    shift = round_index % len(items)
    return list(items[len(items) - shift:]) + list(items[:len(items) - shift])


def visits(items: Sequence[T], repeats: int) -> list[tuple[int, T]]:
    """(round, item) for every visit of a campaign of `repeats` rounds."""
    return [(r, item) for r in range(max(1, repeats)) for item in round_order(items, r)]
