"""A worker that wakes while the app closes must not find its widgets half removed.

The child below sets the worker's event as it is unmounted, which is the moment
a slow SSH read could answer while `run_test` takes the screen down: the worker
then queries a child that is gone. Textual's own ending order (workers cancelled
before the screens come down) is what `OrderlyExit` gives every app here.
"""
from __future__ import annotations

import asyncio

from textual import work
from textual.app import App, ComposeResult
from textual.containers import Vertical
from textual.widgets import Static

from screens.orderly_exit import OrderlyExit


def _app(base: type) -> App:
    answered = asyncio.Event()
    woke: list[str] = []

    class Child(Static):
        def on_unmount(self) -> None:
            answered.set()            # the read answers just as the screen comes down

    class Holder(Vertical):
        def compose(self) -> ComposeResult:
            yield Child("x", id="child")

        def on_mount(self) -> None:
            self.wait_for_answer()

        @work
        async def wait_for_answer(self) -> None:
            await answered.wait()
            woke.append("woke")
            self.query_one("#child", Static).update("answered")

    class Host(base):
        def compose(self) -> ComposeResult:
            yield Holder()

    app = Host()
    app.woke = woke
    return app


async def test_a_worker_is_cancelled_before_the_screen_comes_down():
    app = _app(type("Ordered", (OrderlyExit, App), {}))
    async with app.run_test():
        pass
    assert app.woke == []        # cancelled: it never ran on into the half-removed screen


async def test_without_it_the_same_worker_fails_on_its_removed_child():
    """The case the mixin exists for: without it the run ends in the worker's query failure."""
    from textual.worker import WorkerFailed

    app = _app(App)
    try:
        async with app.run_test():
            pass
    except WorkerFailed as exc:
        assert "No nodes match '#child'" in str(exc)
    else:
        raise AssertionError("the unordered app closed without the worker failing: the test no longer shows the race")
