"""The console at the size operators split a terminal to (100x30): nothing focused is hidden,
every key belongs to what has focus, Esc closes the top layer. Driven with Pilot on the demo's
world (no simulator started)."""
from __future__ import annotations


import pytest
from textual.widgets import Input

from screens.app import GpudeckApp
from widgets.roofline_table import RooflineTable
from tests.harness import wait_until
from tests.test_console_keys import _shown_keys

SMALL = (100, 30)


def _on_screen(app, widget) -> bool:
    """Whether the widget is drawn whole inside the visible screen, not scrolled away."""
    region = widget.region
    visible = app.screen.find_widget(widget).visible_region if hasattr(app.screen, "find_widget") else region
    return region.height > 0 and visible == region and app.screen.region.contains_region(region)


async def test_whatif_field_is_in_view_and_takes_the_digit(demo_world):
    """4, w, 2 at 100x30: the focused GPU field is on screen, the footer offers leaving it, and the
    2 goes into the field the operator sees (not a hidden one)."""
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        pane = app.panes["roofline"]
        await pilot.press("4")
        await wait_until(pilot, lambda: pane.roof is not None, what="roofline")
        await pilot.press("w")
        # the field takes the focus at once; the tab scrolls it into view after the next refresh
        await wait_until(pilot, lambda: isinstance(app.focused, Input) and app.focused.id == "wi-gpu"
                     and _on_screen(app, app.focused), what="the GPU field focused and in view")
        assert "escape" in _shown_keys(app) and "w" not in _shown_keys(app)
        for knob in ("#wi-step_overhead_us", "#wi-context"):  # every field fits the width
            assert pane.query_one(knob).region.right <= SMALL[0]
        await pilot.press("tab", "tab", "tab", "tab", "tab", "tab", "tab", "tab", "tab", "tab")
        await wait_until(pilot, lambda: app.focused.id == "wi-step_overhead_us" and _on_screen(app, app.focused),
                     what="the overhead field focused and scrolled into view")
        await pilot.press("escape")
        await wait_until(pilot, lambda: isinstance(app.focused, RooflineTable) and "w" in _shown_keys(app),
                     what="Esc back on the table with w offered")


async def test_roofline_tab_scrolls_when_it_does_not_fit(demo_world):
    """At 100x30 with the what-if open the tab is taller than the screen: End and PageDown reach its
    bottom from the table, Home comes back."""
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        pane = app.panes["roofline"]
        await pilot.press("4")
        await wait_until(pilot, lambda: pane.roof is not None, what="roofline")
        await pilot.press("w", "escape")
        await wait_until(pilot, lambda: isinstance(app.focused, RooflineTable) and pane.has_class("whatif")
                     and pane.max_scroll_y > 0, what="the what-if open, the table focused, the tab taller than the screen")
        assumptions = pane.query_one("#rl-assumptions")
        assert "weights_gb_per_gpu_stored" in str(assumptions.render())  # not cut to a few lines
        await pilot.press("end")
        await wait_until(pilot, lambda: pane.scroll_y == pane.max_scroll_y, what="the bottom of the tab")
        await pilot.press("home")
        await wait_until(pilot, lambda: pane.scroll_y == 0, what="the top of the tab")
        await pilot.press("pagedown")
        await wait_until(pilot, lambda: pane.scroll_y > 0, what="a page down")


async def test_q_and_letters_belong_to_a_focused_drop_down(demo_world):
    """Bench at 100x30: on the model drop-down, q neither quits nor reaches the tab; it opens the
    list. Esc closes the list, Esc again leaves the field, and then q quits."""
    from textual.widgets import Select

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        pane = app.panes["bench"]
        await pilot.press("3")
        await wait_until(pilot, lambda: app.tabs.active == "bench", what="the Bench tab")
        model = pane.query_one("#bf-model", Select)
        app.set_focus(model)
        await wait_until(pilot, lambda: app.focused is model, what="the model drop-down focused")
        assert "q" not in _shown_keys(app) and "s" not in _shown_keys(app)
        await pilot.press("q", "s", "H", "question_mark")
        # the list opening proves the keys reached the drop-down; only then is "nothing else happened" true
        await wait_until(pilot, lambda: model.expanded, what="the letter opening the list")
        assert app.is_running and app.return_code is None
        assert not app.screen.query("KeysPanel") and app.screen is app.screen_stack[0]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not model.expanded and app.focused is model, what="Esc closing the list")
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.focused is not model and not isinstance(app.focused, (Input, Select)),
                     what="Esc leaving the field")
        assert "q" in _shown_keys(app)


@pytest.mark.parametrize("tab,first_key", [("2", "l"), ("5", "a"), ("4", "w")])
async def test_keys_panel_lists_the_tab_first_and_esc_closes_it(demo_world, tab, first_key):
    """`?` on Server, Tasks and Roofline: the tab's own keys come first, grouped, Textual's cursor keys
    not at all; Esc closes the panel wherever the focus is (the log, a table)."""
    from widgets.keys_panel import KeysPanel

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        tab_id = {"2": "server", "5": "tasks", "4": "roofline"}[tab]
        await pilot.press(tab)
        await wait_until(pilot, lambda: app.tabs.active == tab_id, what=f"the {tab_id} tab")
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: app.screen.query(KeysPanel) and app.screen.query_one(KeysPanel).query("#keys-text"),
                     what="the keys panel")
        panel = app.screen.query_one(KeysPanel)
        titles = [title for title, _ in panel.groups]
        assert titles[-1] == "Everywhere" and len(titles) >= 2
        assert panel.groups[0][1][0][0] == first_key
        text = str(panel.query_one("#keys-text").render())
        assert "Page Left" not in text and "pgup" not in text
        if tab == "2":
            assert titles[:2] == ["Configs", "Log"]
            log = app.panes["server"].query_one("LogView")
            app.set_focus(log)
            await wait_until(pilot, lambda: app.focused is log, what="the log focused")
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.screen.query(KeysPanel), what="Esc closing the keys panel")


async def test_tasks_filter_is_cleared_by_esc(demo_world):
    from widgets.task_table import TaskTable

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        pane = app.panes["tasks"]
        await pilot.press("5")
        await wait_until(pilot, lambda: pane.board is not None, what="board")
        shown = pane.query_one(TaskTable).row_count
        await pilot.press("slash", "z", "z", "q", "enter")
        await wait_until(pilot, lambda: pane.filter_text == "zzq" and pane.query_one(TaskTable).row_count < shown
                     and isinstance(app.focused, TaskTable), what="the filter kept and the table focused")
        assert "escape" in _shown_keys(app)
        await pilot.press("escape")
        await wait_until(pilot, lambda: pane.filter_text == "" and pane.query_one(TaskTable).row_count == shown,
                     what="Esc clearing the filter")


async def test_tab_titles_carry_their_digit(demo_world):
    from screens.tabs import TABS

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.pause()
        for n, (tab_id, title, _, _) in enumerate(TABS, start=1):
            assert str(app.tabs.get_tab(tab_id).label).startswith(f"{n} {title}")
        await pilot.press("6")
        await wait_until(pilot, lambda: app.tabs.active == "campaign", what="6 opening the Campaign tab")


async def test_leaving_the_log_filter_keeps_the_line_in_view():
    """x with a filter on clears it; the line the operator was on stays current and in view,
    instead of the view jumping to the top of the log."""
    from textual.app import App

    from widgets.log_view import LogView

    class LogApp(App):
        def compose(self):
            yield LogView()

    app = LogApp()
    async with app.run_test(size=SMALL) as pilot:
        view = app.query_one(LogView)
        view.add_lines([f"line {i} {'ERROR' if i % 10 == 0 else 'ok'}" for i in range(1, 501)])
        await wait_until(pilot, lambda: view.virtual_size.height >= 500, what="the 500 lines laid out")
        view.set_filter("ERROR")
        view.current = None
        view.scroll_home(animate=False)
        found = view.find("line 300 ")
        assert found.number == 300
        view.set_filter(None)
        # the view scrolls to the kept line once the unfiltered log is laid out again

        def kept_in_view() -> bool:
            top = int(view.scroll_y)
            return top <= view.current < top + view.size.height

        await wait_until(pilot, lambda: view.current_line()[0] == 300 and kept_in_view(), what="line 300 current and in view")
        assert int(view.scroll_y) > 200


async def test_every_focus_stop_is_marked_and_keeps_its_keys_in_the_footer(demo_world):
    """Tab never lands on the tab strip (where the pane's keys vanished unseen); on Server it reaches
    the flags table, which then carries the accent edge the config list and log carry."""
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("1")
        await wait_until(pilot, lambda: app.tabs.active == "gpus", what="the GPUs tab")
        await pilot.press("tab")
        gpus = app.panes["gpus"]
        await pilot.press("f")  # the pane takes its key: handled after the Tab, so the Tab was handled too
        await wait_until(pilot, lambda: gpus.fleet_shown, what="f reaching the GPUs pane after Tab")
        assert "f" in _shown_keys(app)  # the GPUs pane still has the focus
        await pilot.press("f")
        await wait_until(pilot, lambda: not gpus.fleet_shown, what="f closing the fleet view")
        await pilot.press("2")
        await wait_until(pilot, lambda: len(app.panes["server"].configs) == 3, what="configs")
        flags = app.panes["server"].query_one("#flags")
        for _ in range(4):
            if app.focused is flags:
                break
            was = app.focused
            await pilot.press("tab")
            await wait_until(pilot, lambda: app.focused is not was, what="Tab moving the focus")
        assert app.focused is flags
        assert flags.styles.border_left[0] == "outer"
        assert "l" in _shown_keys(app)


async def test_suggestions_can_be_browsed_as_a_list(demo_world):
    """Three suggestions: the third (the README's crash investigation) is reached with the arrows and
    accepted with Enter; n dismisses the highlighted one; the line names s/y/n before the text, uncut."""
    from profiles.task_suggestion import Suggestion
    from screens.suggestions import SuggestionList

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["tasks"]
        await pilot.press("5")
        await wait_until(pilot, lambda: pane.board is not None, what="board")
        for n, text in enumerate(["Re-run the failed level at 256", "Check efficiency of run b",
                                  "Investigate cuda-illegal-address in run_tp8_ep8_crash " + "x" * 150]):
            # offered in the same minute at one priority: the list keeps the board's order (it sorts by
            # priority, then newest first)
            pane.board.suggest(Suggestion(key=f"k{n}", text=text, kind="crash", created="2026-12-01T10:00:00"))
        pane.redraw()
        suggestion = pane.query_one("#suggestion")
        line = suggestion.render()
        assert str(line).startswith("✚ 3 suggested · s list · y accept · n dismiss")
        await wait_until(pilot, lambda: suggestion.size.width > 0 and suggestion.size.height == 1,
                     what="the suggestion line laid out on one row")  # cut at the edge, never wrapped
        before = len(pane.board.tasks)
        await pilot.press("s")
        await wait_until(pilot, lambda: isinstance(app.screen, SuggestionList), what="the suggestion list")
        await pilot.press("down", "down", "enter")
        await wait_until(pilot, lambda: len(pane.board.suggestions) == 2, what="accept")
        assert any(t.text.startswith("Investigate cuda-illegal-address") for t in pane.board.tasks)
        assert len(pane.board.tasks) == before + 1
        await pilot.press("n")  # the highlighted one (now the second of two) goes
        await wait_until(pilot, lambda: len(pane.board.suggestions) == 1, what="dismiss")
        assert [s.key for s in pane.board.suggestions] == ["k0"]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, SuggestionList), what="Esc closing the list")


async def test_readonly_says_so_when_a_removed_key_is_pressed(demo_world):
    app = GpudeckApp(profile_name="demo", readonly=True)
    async with app.run_test(size=SMALL) as pilot:
        await pilot.press("2")
        await wait_until(pilot, lambda: len(app.panes["server"].configs) == 3, what="configs")
        assert "l" not in _shown_keys(app)
        await pilot.press("l")

        def said() -> bool:
            return any("read-only" in n.message and "launch" in n.message for n in app._notifications)

        await wait_until(pilot, said, what="a notice that launching is read-only")


async def test_a_toast_shows_a_path_whole_on_one_line(demo_world):
    from textual.widgets._toast import Toast

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL, notifications=True) as pilot:
        await pilot.pause()
        message = "wrote /tmp/gpudeck-demo-k2j4h5g6/home/data/profiles/demo/findings.md"
        app.notify(message)
        await wait_until(pilot, lambda: bool(app.screen.query(Toast)), seconds=5, what="the toast")
        toast = app.screen.query(Toast).last()
        await wait_until(pilot, lambda: toast.region.height > 0, seconds=5, what="the toast laid out")
        assert toast.region.height == 1 and toast.region.width >= len(message)
