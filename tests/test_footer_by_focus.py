"""The footer names the keys of what has the focus, at 100x30 on the demo: while typing a task it
showed `+- priority` (the field takes + and - as text); the Server tab showed the same keys for the
config list and the log."""
from __future__ import annotations

from screens.app import GpudeckApp
from tests.harness import wait_until
from widgets.log_view import LogView
from widgets.steady_footer import SteadyFooter


def fits(app) -> bool:
    """Every key whole, none under the palette key, at this width."""
    keys = [k for k in shown(app) if not k.has_class("-command-palette")]
    palette = app.screen.query_one("FooterKey.-command-palette")
    return all(k.region.width > 0 for k in keys) and max(k.region.right for k in keys) <= palette.region.x


def shown(app) -> list:
    """The footer's keys on show (it keeps the keys of other tabs hidden, to reuse them)."""
    return app.screen.query_one(SteadyFooter).shown_keys()


def footer(app) -> dict[str, str]:
    """The footer's keys as drawn: key → words (a group's keys share its label)."""
    return {str(key.key): str(key.description) for key in shown(app)}


async def test_typing_a_task_names_the_typing_keys(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        await pilot.press("5")
        await wait_until(pilot, lambda: "add" in footer(app).values(), what="the Tasks tab's keys")
        assert "plus" in footer(app)
        await pilot.press("a")
        await wait_until(pilot, lambda: getattr(app.focused, "id", None) == "editor", what="the task editor")
        await wait_until(pilot, lambda: "plus" not in footer(app), what="the board's keys gone from the footer")
        keys = footer(app)
        assert keys.get("enter") == "save" and keys.get("escape") == "close"
        assert not {"plus", "minus", "space", "question_mark"} & set(keys)
        # the keys the footer names do what it says: + is text, Enter saves
        await pilot.press("x", "plus", "enter")
        pane = app.panes["tasks"]
        await wait_until(pilot, lambda: any(t.text == "x+" for t in pane.board.tasks), what="the task saved")
        await wait_until(pilot, lambda: "plus" in footer(app), what="the board's keys back")


async def test_server_footer_differs_between_the_list_and_the_log(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        await pilot.press("2")
        pane = app.panes["server"]
        await wait_until(pilot, lambda: getattr(app.focused, "id", None) == "configs", what="the config list focused")
        await wait_until(pilot, lambda: "launch" in footer(app).values(), what="the list's keys")
        on_list = footer(app)
        assert {"l", "k", "d", "a"} <= set(on_list) and not {"f", "slash", "z"} & set(on_list)
        await wait_until(pilot, lambda: fits(app), what="the list's footer laid out whole in 100 columns")
        pane.query_one(LogView).focus()
        await wait_until(pilot, lambda: "follow" in footer(app).values(), what="the log's keys")
        on_log = footer(app)
        assert {"f", "slash", "z", "j"} <= set(on_log) and not {"l", "k", "d", "a"} & set(on_log)
        await wait_until(pilot, lambda: fits(app), what="the log's footer laid out whole in 100 columns")
        assert on_log["question_mark"] == "keys"  # the way to every key stays
        # every key still works from the log: `l` asks to launch the selected config
        await pilot.press("l")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "Confirm", what="the launch question")
        await pilot.press("n")
        # the search box names its own keys
        await wait_until(pilot, lambda: app.screen.__class__.__name__ != "Confirm", what="the question closed")
        pane.query_one(LogView).focus()
        await pilot.press("slash")
        await wait_until(pilot, lambda: footer(app).get("enter") == "find", what="the search box's keys")
        assert footer(app).get("escape") == "close" and "f" not in footer(app)
