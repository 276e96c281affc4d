"""The one thing calibration needs from a roofline: the ideal step time at a batch.

A Protocol here, below both `result` (which builds rooflines and reports
their calibration) and `calibrate` (which fits a measured sweep to one), so
neither has to import the other to name it.
"""
from __future__ import annotations

from typing import Protocol


class StepTimes(Protocol):
    def step_time_s(self, batch: int, bound: str = "realistic") -> float:
        """Seconds per decode step at this batch: `ideal` or `realistic`."""
        ...
