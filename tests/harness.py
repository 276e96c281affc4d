"""The one test harness for panes: a host app that holds a single pane, and the wait-until helpers
(`wait_until` inside a running app, `poll_until` outside one).

    app = HostApp(GPUsPane(), session)        # a bare HostSession: the pane runs a private runtime
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: "8 · 7 STALE" in app.summaries, what="the stale summary")
"""
from __future__ import annotations

import time

from textual.app import App, ComposeResult
from textual.widgets import Footer

from screens.orderly_exit import OrderlyExit


async def wait_until(pilot, predicate, seconds: float = 30.0, what: str = "the condition") -> None:
    """Let the app run until `predicate()` holds; fail naming `what` if it never does."""
    for _ in range(int(seconds / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    assert predicate(), f"timed out after {seconds:g}s waiting for {what}"


def poll_until(predicate, seconds: float = 30.0, what: str = "the condition", every: float = 0.05) -> None:
    """Outside an app (a process, a file, a thread): check `predicate()` until it holds; fail
    naming `what` if it never does within `seconds`."""
    deadline = time.monotonic() + seconds
    while not predicate():
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {seconds:g}s waiting for {what}")
        time.sleep(every)


class HostApp(OrderlyExit, App):
    """One pane on one host: `summaries` collects its tab titles, `opened` the hosts it asked for."""

    def __init__(self, pane, session=None, footer: bool = True, focus: str | None = None,
                 title: str | None = None) -> None:
        super().__init__()
        self.title = title or type(self).__name__  # snapshots show it in the window frame
        self.pane = pane
        self.session = session
        self.footer = footer
        self.focus_selector = focus
        self.summaries: list[str] = []
        self.opened: list[str] = []

    def compose(self) -> ComposeResult:
        yield self.pane
        if self.footer:
            yield Footer()

    async def on_mount(self) -> None:
        if self.session is not None:
            await self.pane.set_session(self.session)
        if self.focus_selector:
            self.pane.query_one(self.focus_selector).focus()

    def on_pane_summary(self, message) -> None:
        self.summaries.append(message.text)

    def on_gpus_pane_open_host(self, message) -> None:
        self.opened.append(message.name)
