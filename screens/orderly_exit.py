"""Work stops before the screens come down, however the app ends.

A normal exit ends Textual's message loop first (its workers cancelled, its
timers stopped) and only then removes the screens. `App.run_test` removes the
screens while the loop still runs, so a worker waking from an SSH read, or a
timer's tick, could find its widgets half removed and fail on a query. Both
ways now end in the same order: the app's workers and every node's timers stop
first. (This overrides Textual's private `_shutdown`, the one step both ways
share; timers are reached through each node's private timer set.)
"""
from __future__ import annotations


class OrderlyExit:
    async def _shutdown(self) -> None:
        self.workers.cancel_all()
        nodes = [self]
        for screen in self.screen_stack:
            nodes += [screen, *screen.walk_children(with_self=False)]
        for node in nodes:
            for timer in list(getattr(node, "_timers", ())):
                timer.stop()
        await super()._shutdown()
