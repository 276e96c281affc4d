"""Recent utilisation per GPU, for the 5-minute sparkline.

Kept by time, not by sample count, so a change of sampling interval or a gap
in the stream shows up as a gap rather than squeezing the picture.
"""
from __future__ import annotations

from collections import deque
from typing import Any

from .model import NA, Snapshot, known

WINDOW_S = 300.0


class UtilHistory:
    def __init__(self, window_s: float = WINDOW_S):
        self.window_s = window_s
        self._points: dict[Any, deque] = {}

    def add(self, snap: Snapshot) -> None:
        if snap.taken_at is None or snap.sample_stale:
            return
        for gpu in snap.gpus:
            points = self._points.setdefault(gpu.key, deque())
            if points and points[-1][0] >= snap.taken_at:
                continue
            points.append((snap.taken_at, gpu.util_gpu_pct))
            while points and points[0][0] < snap.taken_at - self.window_s:
                points.popleft()

    def buckets(self, key: Any, width: int, now: float) -> list[Any]:
        """`width` values (oldest first), each the mean of its slice of the window; NA where empty."""
        points = self._points.get(key, ())
        span = self.window_s / width
        start = now - self.window_s
        sums = [0.0] * width
        counts = [0] * width
        for at, value in points:
            if not known(value):
                continue
            slot = int((at - start) // span)
            if 0 <= slot < width:
                sums[slot] += value
                counts[slot] += 1
            elif slot == width:  # a sample stamped a hair after `now`
                sums[-1] += value
                counts[-1] += 1
        return [sums[i] / counts[i] if counts[i] else NA for i in range(width)]

    def clear(self) -> None:
        self._points.clear()
