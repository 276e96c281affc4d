"""A look at the keys that never runs must not freeze the footer.

The footer asks Textual to run its look at the keys after the next frame, and
Textual queues that on whichever screen is on top at the time: with a
confirmation open, the dialog. A dialog closed before it draws again (a quick
`y` on a loaded machine) takes that look with it. The footer once kept a flag
saying "a look is queued" that only the look itself cleared; after one lost
look it showed the old tab's keys for good (the README walk-through in tmux
caught it: the Server tab with the Bench tab's keys).
"""
from __future__ import annotations

from textual.app import App, ComposeResult
from textual.widgets import Static

from tests.harness import wait_until
from widgets.steady_footer import SteadyFooter


class Keyed(Static):
    can_focus = True

    def __init__(self, key: str, words: str, **kwargs) -> None:
        super().__init__(words, **kwargs)
        self._bindings.bind(key, "noop", words)


class TwoKeys(App):
    def compose(self) -> ComposeResult:
        yield Keyed("l", "launch", id="first")
        yield Keyed("r", "run sweep", id="second")
        yield SteadyFooter()


def _shown(app: App) -> str:
    from widgets.steady_footer import SteadyFooter

    return " ".join(str(key.description) for key in app.screen.query_one(SteadyFooter).shown_keys())


async def test_the_footer_follows_the_focus_after_a_look_was_lost():
    app = TwoKeys()
    async with app.run_test() as pilot:
        footer = app.query_one(SteadyFooter)
        app.set_focus(app.query_one("#first"))
        await wait_until(pilot, lambda: "launch" in _shown(app), what="the first widget's key")
        await pilot.pause()   # any look still queued from that focus move runs (the new footer needs no such wait)
        handed = footer.call_after_refresh
        lost: list = []
        footer.call_after_refresh = lambda callback, *a, **k: lost.append(callback) or True  # the dialog took it
        footer.bindings_changed(app.screen)
        assert lost, "the footer asked for no look"
        footer.call_after_refresh = handed
        app.set_focus(app.query_one("#second"))
        await wait_until(pilot, lambda: "run sweep" in _shown(app) and "launch" not in _shown(app), 10,
                         "the footer to show the newly focused widget's key")
