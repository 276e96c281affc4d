"""The consoles' main screen: moving the focus repaints the widgets it concerns, not the whole screen.

Textual's Screen keeps the focused widget in a reactive attribute that repaints
the whole screen whenever it changes. The widget that gains the focus and the
one that loses it are restyled and repaint themselves anyway, and so does the
footer when the keys change; the whole-screen repaint came on top of that at
every tab switch, a second full frame written to the terminal right after the
first. Without it a switch costs about 15% less CPU (tests/bench/tui_keys.py).
"""
from __future__ import annotations

from textual.reactive import Reactive
from textual.screen import Screen
from textual.widget import Widget


class DeckScreen(Screen):
    focused: Reactive[Widget | None] = Reactive(None, repaint=False)
