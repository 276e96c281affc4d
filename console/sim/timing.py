"""How long one decode step takes for a batch of B running requests.

The simulator needs one function, `step_time_s(batch)`. It is the roofline's
ideal step time for that batch divided by the efficiency factor, so that
"3.4% of the ideal" in the simulator means exactly what it means in the
Roofline pane.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Protocol


class StepTimer(Protocol):
    def step_time_s(self, batch: int) -> float: ...


@dataclass
class ScaledTimer:
    """An ideal per-step time scaled by 1/efficiency, cached per batch size."""

    ideal_step_s: Callable[[int], float]
    efficiency: float
    source: str                          # where the ideal comes from, for the log
    overhead_s: float = 0.0              # fixed cost added to every step (launches, scheduling, allreduce latency)
    _cache: dict[int, float] = field(default_factory=dict, repr=False)

    def step_time_s(self, batch: int) -> float:
        batch = max(1, int(batch))
        cached = self._cache.get(batch)
        if cached is None:
            cached = self.ideal_step_s(batch) / self.efficiency + self.overhead_s
            self._cache[batch] = cached
        return cached

    def tokens_per_s(self, batch: int) -> float:
        """Aggregate generation throughput at this batch."""
        return max(1, batch) / self.step_time_s(batch)


@dataclass
class FixedTimer:
    """A constant step time: for tests that need a timer without a model."""

    seconds: float
    source: str = "fixed"

    def step_time_s(self, batch: int) -> float:
        return self.seconds

    def tokens_per_s(self, batch: int) -> float:
        return max(1, batch) / self.seconds
