"""The tab containers draw blank lines, and that is exactly what they drew in full (screens/deck_tabs.py)."""
from __future__ import annotations

from textual.geometry import Region
from textual.widgets import ContentSwitcher, TabbedContent, TabPane

from screens.app import GpudeckApp
from screens.pane import Pane
from screens.tabs import TABS
from tests.harness import wait_until


def look(ch: str, style) -> tuple:
    """What a cell shows: a blank shows its background (and a line through or under it), not its
    text colour."""
    if ch != " " or style is None:
        return ch, style
    return ch, style.bgcolor, style.underline, style.strike, style.overline, style.reverse and style.color


def cells(strips) -> list[list[tuple]]:
    """Each line as what each cell shows, however it is cut into segments."""
    return [[look(ch, seg.style) for seg in strip for ch in seg.text] for strip in strips]


def drawn(widget, blank: bool) -> list[list[tuple[str, object]]]:
    widget.BLANK = blank
    widget._styles_cache.clear()
    width, height = widget.size
    return cells(widget.render_lines(Region(0, 0, width, height)))


async def test_blank_containers_draw_what_they_would_draw_in_full(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        await app.started.wait()
        for tab_id, *_ in TABS:
            app.action_tab(tab_id)
            await wait_until(pilot, lambda: app.tabs.query_one(ContentSwitcher).current == tab_id,
                             what=f"tab {tab_id} shown")
            await pilot.pause()
            shown = [w for w in app.screen.query("*") if w.BLANK and w.display and w.size.area]
            kinds = {type(w) for w in shown}
            assert any(issubclass(k, TabbedContent) for k in kinds)
            assert ContentSwitcher in kinds
            assert any(issubclass(k, TabPane) for k in kinds)
            assert any(issubclass(k, Pane) for k in kinds)
            for widget in shown:
                assert widget.border_title is None and widget.border_subtitle is None, widget
                blank = drawn(widget, True)
                full = drawn(widget, False)
                widget.BLANK = True
                assert blank == full, f"{widget!r} on tab {tab_id} draws something of its own"
