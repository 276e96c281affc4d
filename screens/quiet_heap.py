"""The app side of `console.heap`: settle once started, note every key, sweep while the operator is idle."""
from __future__ import annotations

from textual import events

from console.heap import HeapKeeper

CHECK_S = 5.0  # how often the app asks whether a sweep is due


class QuietHeap:
    heap: HeapKeeper | None = None

    def settle_heap(self) -> None:
        """Called once the app has built what it keeps (every tab mounted)."""
        self.heap = HeapKeeper()
        self.heap.settle()
        self.set_interval(CHECK_S, self.heap.sweep_if_quiet, name="heap-sweep")

    async def on_event(self, event: events.Event) -> None:
        if self.heap is not None and isinstance(event, events.InputEvent):
            self.heap.touched()
        await super().on_event(event)

    async def _shutdown(self) -> None:
        try:
            await super()._shutdown()
        finally:
            if self.heap is not None:
                self.heap.release()
