"""Moving the focus repaints the widgets it concerns, not the whole screen (screens/deck_screen.py)."""
from __future__ import annotations

import asyncio

from textual.app import App, ComposeResult
from textual.screen import Screen
from textual.widgets import Button, Static

from screens.deck_screen import DeckScreen


def _app(screen_type: type[Screen]) -> App:
    class Probe(App):
        CSS = "Button { width: 10; } Button:focus { background: red; }"

        def __init__(self) -> None:
            super().__init__()
            self.updates: list[str] = []

        def get_default_screen(self) -> Screen:
            return screen_type(id="_default")

        def compose(self) -> ComposeResult:
            yield Button("one", id="one")
            yield Button("two", id="two")
            for n in range(30):
                yield Static(f"line {n}")

        def _display(self, screen, renderable) -> None:
            if renderable is not None:
                self.updates.append(type(renderable).__name__)
            super()._display(screen, renderable)

    return Probe()


async def _frame(app: App) -> None:
    drawn = asyncio.Event()
    app.screen.call_after_refresh(drawn.set)
    await drawn.wait()


async def _focus_updates(app: App) -> list[str]:
    async with app.run_test(size=(60, 40)) as pilot:
        app.query_one("#one").focus()
        await _frame(app)
        await pilot.pause()
        app.updates.clear()
        app.query_one("#two").focus()
        await _frame(app)
        await pilot.pause()
        assert app.focused is app.query_one("#two")
        return list(app.updates)


async def test_a_focus_move_draws_partial_updates_only():
    updates = await _focus_updates(_app(DeckScreen))
    assert updates and "LayoutUpdate" not in updates      # the buttons repainted, the screen not rewritten


async def test_textuals_own_screen_rewrites_the_whole_screen_on_a_focus_move():
    """What DeckScreen exists for: the stock screen writes a full frame on every focus move."""
    updates = await _focus_updates(_app(Screen))
    assert "LayoutUpdate" in updates
