"""A DataTable that never draws a cell as markup or lets a control character through.

Cells hold process names, config names, server errors and task text. Textual's
DataTable reads a str cell as markup (`[link=...]` becomes a link) and draws the
characters it is given, escape sequences included. Every table in gpudeck is
this one, so each cell passes `safe_cell` however it was built.
"""
from __future__ import annotations

from console.safe_text import safe_cell

from .drawn_cells import DrawnCellTable


class SafeDataTable(DrawnCellTable):
    def add_row(self, *cells, **kwargs):
        return super().add_row(*(safe_cell(c) for c in cells), **kwargs)

    def update_cell(self, row_key, column_key, value, **kwargs) -> None:
        super().update_cell(row_key, column_key, safe_cell(value), **kwargs)

    def add_column(self, label, *args, **kwargs):
        return super().add_column(safe_cell(label), *args, **kwargs)
