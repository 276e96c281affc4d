"""A DataTable whose drawn cells are cached by what they show, not by when the table last changed.

Textual's DataTable keys its cache of drawn cells on a counter that every
`update_cell` bumps, and empties it on every restyle (a focus move is one). So
one new number in the GPU table, or a tab switch that moves the focus, draws
every visible cell again through Rich, and that is most of what showing a table
costs. A drawn cell depends only on its text (plain text, styles, spans,
wrapping), its place (the row and column go into the mouse metadata), its width
and height, and the styles it is drawn with. Keyed on exactly those, a cell is
drawn again only when one of them changed. A cell that is not Rich `Text` has no
such key and is drawn the stock way.
"""
from __future__ import annotations

from rich.padding import Padding
from rich.style import Style
from rich.text import Text
from textual.cache import LRUCache
from textual.renderables.styled import Styled
from textual.widgets import DataTable

CACHED_CELLS = 4096  # a few screens of cells; drawn lines are small


def text_key(cell: Text) -> tuple:
    """Everything about a Text that changes how it is drawn."""
    return (cell.plain, cell.style, tuple(cell.spans), cell.justify, cell.overflow, cell.no_wrap, cell.end,
            cell.tab_size)


class DrawnCellTable(DataTable):
    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._drawn_cells: LRUCache[tuple, list] = LRUCache(CACHED_CELLS)

    def _render_cell(self, row_index: int, column_index: int, base_style: Style, width: int,
                     cursor: bool = False, hover: bool = False):
        is_header = row_index == -1
        is_label = column_index == -1
        label, cells = self._get_row_renderables(row_index)
        cell = (label if label is not None else "") if is_label else cells[column_index]
        if not isinstance(cell, Text):
            return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
        if is_header:
            height = self.header_height
        else:
            row = self.rows[self._row_locations.get_key(row_index)]
            if row.auto_height and row.height == 0:
                return super()._render_cell(row_index, column_index, base_style, width, cursor, hover)
            height = row.height
        fixed = not is_header and not is_label and (row_index < self.fixed_rows
                                                    or column_index < self.fixed_columns)
        component_style, post_style = self._get_styles_to_render_cell(
            is_header, is_label, fixed, hover, cursor, self.show_cursor, self._show_hover_cursor,
            self.cursor_foreground_priority == "css", self.cursor_background_priority == "css")
        key = (row_index, column_index, text_key(cell), width, height, self.cell_padding, base_style,
               component_style, post_style)
        lines = self._drawn_cells.get(key)
        if lines is None:
            options = self.app.console_options.update_dimensions(width, height)
            if height == 1:
                options = options.update(no_wrap=True)
            style = base_style + Style.from_meta({"row": row_index, "column": column_index})
            lines = self.app.console.render_lines(
                Styled(Padding(cell, (0, self.cell_padding)), pre_style=style + component_style,
                       post_style=post_style), options)
            self._drawn_cells[key] = lines
        return lines
