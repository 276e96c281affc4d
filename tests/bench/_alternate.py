"""The one alternation every bench uses: each variant once per round, the order reversed every
other round, so a drift in the machine's load hits gpudeck and its peer alike.

    for i, names in alternate(["peer", "gpudeck"], rounds, loads):
        for name in names: ...
    print(load_line(loads))

The 1-minute load average is noted after each round, and a bench prints its
range beside the ratios: on a shared machine a ratio means little without it.
"""
from __future__ import annotations

import os
import statistics
from typing import Iterable, Iterator, TypeVar

T = TypeVar("T")


def alternate(names: Iterable[T], rounds: int, loads: list[float] | None = None) -> Iterator[tuple[int, list[T]]]:
    """(round, the names in that round's order): as given on even rounds, reversed on odd ones.
    After each round the 1-minute load average is appended to `loads`, when given."""
    names = list(names)
    for i in range(rounds):
        yield i, names if i % 2 == 0 else names[::-1]
        if loads is not None:
            loads.append(os.getloadavg()[0])


def load_line(loads: list[float]) -> str:
    """The load the rounds ran under, and the cores they shared."""
    return f"load average (1 min) during the runs: {min(loads):.1f}-{max(loads):.1f}; cores: {os.cpu_count()}"


def load_average() -> str:
    """The 1, 5 and 15-minute load averages now, for a line per run."""
    return " ".join(f"{x:.2f}" for x in os.getloadavg())


def times_peer(values: list[float], peer: list[float] | float) -> float:
    """The median of `values` over the peer's (a list's median, or one figure already taken)."""
    base = statistics.median(peer) if isinstance(peer, list) else peer
    return statistics.median(values) / base


def pct(values: list[float], q: float) -> float:
    """The q-quantile (0-1) of `values`: the nearest order statistic, no interpolation."""
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(q * (len(ordered) - 1)))]
