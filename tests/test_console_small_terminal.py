"""The console at the size operators split a terminal to (100x30): nothing focused is hidden,
every key belongs to what has focus, Esc closes the top layer. Driven with Pilot on the demo's
world (no simulator started)."""
from __future__ import annotations

import os

import pytest
from textual.widgets import Input, Select

from console import demo
from screens.app import GpudeckApp
from widgets.roofline_table import RooflineTable

SMALL = (100, 30)


async def _until(pilot, predicate, seconds=30.0, what=""):
    for _ in range(int(seconds / 0.1)):
        if predicate():
            return
        await pilot.pause(0.1)
    assert predicate(), f"timed out waiting for {what}"


@pytest.fixture
def demo_world(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    yield world
    world.close()


def _shown_keys(app) -> dict[str, str]:
    return {key: b.binding.description for key, b in app.active_bindings.items() if b.binding.show and b.enabled}


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
        await _until(pilot, lambda: pane.roof is not None, what="roofline")
        await pilot.press("w")
        await pilot.pause()
        field = app.focused
        assert isinstance(field, Input) and field.id == "wi-gpu"
        assert _on_screen(app, field)
        assert "escape" in _shown_keys(app) and "w" not in _shown_keys(app)
        for knob in ("#wi-step_overhead_us", "#wi-context"):  # every field fits the width
            assert pane.query_one(knob).region.right <= SMALL[0]
        await pilot.press("tab", "tab", "tab", "tab", "tab", "tab", "tab", "tab", "tab", "tab")
        assert app.focused.id == "wi-step_overhead_us" and _on_screen(app, app.focused)
        await pilot.press("escape")
        assert isinstance(app.focused, RooflineTable)
        assert "w" in _shown_keys(app)


async def test_roofline_tab_scrolls_when_it_does_not_fit(demo_world):
    """At 100x30 with the what-if open the tab is taller than the screen: End and PageDown reach its
    bottom from the table, Home comes back."""
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        pane = app.panes["roofline"]
        await pilot.press("4")
        await _until(pilot, lambda: pane.roof is not None, what="roofline")
        await pilot.press("w", "escape")
        await pilot.pause()
        assert isinstance(app.focused, RooflineTable) and pane.has_class("whatif")
        assert pane.max_scroll_y > 0
        assumptions = pane.query_one("#rl-assumptions")
        assert "weights_gb_per_gpu_stored" in str(assumptions.render())  # not cut to a few lines
        await pilot.press("end")
        await pilot.pause()
        assert pane.scroll_y == pane.max_scroll_y
        await pilot.press("home")
        await pilot.pause()
        assert pane.scroll_y == 0
        await pilot.press("pagedown")
        await pilot.pause()
        assert pane.scroll_y > 0


async def test_q_and_letters_belong_to_a_focused_drop_down(demo_world):
    """Bench at 100x30: on the model drop-down, q neither quits nor reaches the tab; it opens the
    list. Esc closes the list, Esc again leaves the field, and then q quits."""
    from textual.widgets import Select

    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=SMALL) as pilot:
        pane = app.panes["bench"]
        await pilot.press("3")
        await pilot.pause()
        model = pane.query_one("#bf-model", Select)
        app.set_focus(model)
        await pilot.pause()
        assert "q" not in _shown_keys(app) and "s" not in _shown_keys(app)
        await pilot.press("q", "s", "H", "question_mark")
        await pilot.pause()
        assert app.is_running and app.return_code is None
        assert not app.screen.query("HelpPanel") and app.screen is app.screen_stack[0]
        assert model.expanded  # the letter opened the list
        await pilot.press("escape")
        assert not model.expanded and app.focused is model
        await pilot.press("escape")
        assert app.focused is not model and not isinstance(app.focused, (Input, Select))
        assert "q" in _shown_keys(app)
