"""`q` and Esc close the top layer; `q` quits only from a tab. Before, q did nothing in a
confirmation or the suggestions list and quit the console from the keys panel."""
from __future__ import annotations

from textual.app import App

from profiles.task_suggestion import Suggestion
from screens.app import GpudeckApp
from screens.confirm import Confirm
from screens.suggestions import SuggestionList, _option
from tests.harness import wait_until
from widgets.keys_panel import KeysPanel


async def test_q_closes_the_keys_panel_and_quits_only_after(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: bool(app.screen.query_children(KeysPanel)), what="the keys panel")
        await pilot.press("q")
        await wait_until(pilot, lambda: not app.screen.query_children(KeysPanel), what="the keys panel closed")
        assert app.is_running


class _Modal(App):
    def __init__(self, screen) -> None:
        super().__init__()
        self.modal = screen
        self.answers: list = []

    def on_mount(self) -> None:
        self.push_screen(self.modal, self.answers.append)


async def test_q_answers_no_in_a_confirmation():
    app = _Modal(Confirm("Stop the sweep?", ["What was measured so far is saved."], "Stop"))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the question")
        await pilot.press("q")
        await wait_until(pilot, lambda: app.answers == [False], what="the question answered no")
        assert app.is_running


async def _none(key):
    return []


async def test_q_closes_the_suggestions_which_are_sorted_with_the_time_once():
    waiting = [Suggestion(key="a", text="Lower batch", kind="sweep", priority="low", created="2026-12-01T09:00:00"),
               Suggestion(key="b", text="Investigate segfault in x (crashed 2026-12-01 10:15)", kind="crash",
                          priority="high", created="2026-12-01T10:15:00"),
               Suggestion(key="c", text="Check efficiency", kind="efficiency", priority="medium",
                          created="2026-12-01T11:00:00"),
               Suggestion(key="d", text="Investigate oom in y", kind="crash", priority="high",
                          created="2026-12-01T12:00:00")]
    app = _Modal(SuggestionList(waiting, _none, _none, readonly=False))
    async with app.run_test() as pilot:
        await wait_until(pilot, lambda: isinstance(app.screen, SuggestionList), what="the list")
        assert [s.key for s in app.screen.suggestions] == ["d", "b", "c", "a"]  # high first, newest first within
        assert str(_option(waiting[1]).prompt).count("10:15") == 1
        assert "(2026-12-01 12:00)" in str(_option(waiting[3]).prompt)
        await pilot.press("q")
        await wait_until(pilot, lambda: app.answers == [None], what="the list closed")
        assert app.is_running
