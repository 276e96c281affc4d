"""A Static's text set only when it changed, and laid out again only when its size could change.

Textual's `Static.update` repaints and lays the whole screen out again on every
call, the same text included. A line redrawn each second (a sample's age) or
each sample (a label that says the same thing) then cost the idle console a
screen's layout a second. `show` skips text the widget already shows; a
widget whose size its CSS fixes (`fixed_size`: a line of height 1 across the
pane) or whose new text has the same lines of the same widths as the old is
only repainted.
"""
from __future__ import annotations

from rich.cells import cell_len
from rich.text import Text
from textual.widgets import Static

from .drawn_cells import text_key


def _same(a, b) -> bool:
    if isinstance(a, Text) and isinstance(b, Text):
        return text_key(a) == text_key(b)
    return type(a) is type(b) and a == b


def _shape(content) -> list[int] | None:
    """The cell width of each line, or None when it can't be told without rendering."""
    if isinstance(content, Text):
        return [cell_len(line) for line in content.plain.split("\n")]
    return None


def show(widget: Static, content, *, fixed_size: bool = False) -> bool:
    """Set `content` unless the widget shows it already; whether it was set."""
    old = widget.content
    if _same(old, content):
        return False
    shape = _shape(content)
    widget.update(content, layout=not fixed_size and (shape is None or shape != _shape(old)))
    return True
