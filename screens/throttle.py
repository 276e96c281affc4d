"""Redraws at the rate a person can read, not at the rate data arrives.

A sweep reports progress several times a second and every host samples its
GPUs each second; drawing each report costs a screen layout and a repaint.
A `Throttle` coalesces requests: the first draws at once, the ones that
follow within `interval` seconds become one draw at its end, with the latest
state. While its widget is not on screen (another tab is shown) nothing is
drawn; `flush()` catches up when it is shown again.
"""
from __future__ import annotations

import time
from typing import Callable

from textual.timer import Timer
from textual.widget import Widget


def on_screen(widget: Widget) -> bool:
    """Whether the widget and every container above it are displayed (a hidden tab's are not)."""
    node = widget
    while isinstance(node, Widget):
        if not node.display:
            return False
        node = node.parent
    return True


class Throttle:
    def __init__(self, owner: Widget, draw: Callable[[], None], interval: float) -> None:
        self.owner = owner
        self.draw = draw
        self.interval = interval
        self._last = float("-inf")   # monotonic time of the last draw
        self._due = False            # something changed since the last draw
        self._timer: Timer | None = None

    def request(self) -> None:
        """Something changed: draw now, or once at the end of the interval, or when shown."""
        self._due = True
        if self._timer is not None or not on_screen(self.owner):
            return
        wait = self._last + self.interval - time.monotonic()
        if wait <= 0:
            self._run()
        else:
            self._timer = self.owner.set_timer(wait, self._at_end)

    def flush(self) -> None:
        """Draw now if anything changed since the last draw (the widget was just shown)."""
        if self._due:
            self._cancel()
            self._run()

    def _at_end(self) -> None:
        self._timer = None
        if self._due and on_screen(self.owner):
            self._run()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _run(self) -> None:
        self._due = False
        self._last = time.monotonic()
        self.draw()
