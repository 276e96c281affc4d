"""One row per batch level: both bounds, the measurement at that concurrency, efficiency, binding term."""
from __future__ import annotations

from rich.text import Text

from console.fmt import UNKNOWN
from console.safe_text import safe_text

from console.roofline.compare import Row

from .safe_table import SafeDataTable

COLUMNS = ("batch", "ideal tok/s", "realistic", "measured", "efficiency", "fitted", "bound")


class RooflineTable(SafeDataTable):
    DEFAULT_CSS = "RooflineTable { height: auto; max-height: 16; width: 1fr; }"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for name in COLUMNS:
            self.add_column(name, key=name)

    def show(self, rows: list[Row]) -> None:
        """The rows for these inputs; the cursor stays on its batch (a saved level or a what-if
        keystroke redraws the table, and used to put the cursor back on the first row)."""
        at = self.cursor_row
        held = self.ordered_rows[at].key.value if 0 < at < self.row_count else None
        self.clear()
        for r in rows:
            if r.measured_tok_s is not None:
                measured = Text(f"{r.measured_tok_s:,.1f}", justify="right")
                eff = Text(f"{r.efficiency_pct:.1f}%", justify="right", style="bold")
            elif r.measured_status and r.measured_status != "ok":
                measured = safe_text(r.measured_status, style="red", justify="right")
                eff = Text(UNKNOWN, justify="right")
            else:
                measured = Text(UNKNOWN, style="dim", justify="right")
                eff = Text(UNKNOWN, style="dim", justify="right")
            fitted = (Text(f"{r.fitted_tok_s:,.1f}", justify="right", style="italic")
                      if r.fitted_tok_s is not None else Text(UNKNOWN, style="dim", justify="right"))
            bound_style = {"memory": "cyan", "compute": "magenta"}.get(r.bound.split(":")[0], "yellow")
            self.add_row(Text(str(r.batch), justify="right"),
                         Text(f"{r.ideal_tok_s:,.0f}", justify="right"),
                         Text(f"{r.realistic_tok_s:,.0f}", justify="right"),
                         measured, eff, fitted, safe_text(r.bound, style=bound_style), key=str(r.batch))
        batches = [str(r.batch) for r in rows]
        if held in batches:
            self.move_cursor(row=batches.index(held), animate=False)
