"""The cyclic collector kept out of the operator's keystrokes.

A full collection walks every object the process holds. Once the console has
built its six tabs that is about 165,000 objects and 100-200 ms on this class
of machine: long enough to swallow a key, and it was the slowest tab switch in
every hundred. Nearly all of those objects live as long as the console does.

`settle()` (once the console has started) collects, then freezes what is left
(`gc.freeze`): the collector no longer walks it. Young objects are collected as
before, and reference counting frees everything as usual, frozen or not. An
object frozen here that later becomes part of unreachable cycle would be kept
for good, so `sweep_if_quiet()` thaws, collects and freezes again, but only
when no key has come for `quiet_s` and at most once every `every_s`: the pause
lands while nobody is typing. `release()` thaws everything when the app ends
(the test suite runs hundreds of apps in one process).
"""
from __future__ import annotations

import gc
import time
from typing import Callable

QUIET_S = 30.0     # no key for this long: a full sweep won't be felt
EVERY_S = 600.0    # at most one sweep per ten minutes


class HeapKeeper:
    def __init__(self, clock: Callable[[], float] = time.monotonic, quiet_s: float = QUIET_S,
                 every_s: float = EVERY_S) -> None:
        self.clock = clock
        self.quiet_s = quiet_s
        self.every_s = every_s
        self.last_input = clock()
        self.last_sweep = clock()
        self.sweeps = 0
        self.frozen = False

    def settle(self) -> None:
        """Collect, then freeze what survives: the console's long-lived objects leave the walk."""
        gc.collect()
        gc.freeze()
        self.frozen = True
        self.last_sweep = self.clock()

    def touched(self) -> None:
        """The operator pressed a key or moved the mouse."""
        self.last_input = self.clock()

    def sweep_if_quiet(self) -> bool:
        """Thaw, collect and freeze again, if nobody typed lately and the last sweep is old."""
        now = self.clock()
        if not self.frozen or now - self.last_input < self.quiet_s or now - self.last_sweep < self.every_s:
            return False
        gc.unfreeze()
        gc.collect()
        gc.freeze()
        self.last_sweep = now
        self.sweeps += 1
        return True

    def release(self) -> None:
        """Everything frozen goes back to the collector (the app is ending)."""
        if self.frozen:
            gc.unfreeze()
            self.frozen = False
