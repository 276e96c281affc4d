"""The fleet overview: one line per profile, updated in place."""
from __future__ import annotations

from typing import Sequence

from rich.text import Text

from console.gpus.fleet_table import HostRow
from console.gpus.text import age, gib
from console.safe_text import safe_text

from .safe_table import SafeDataTable

COLUMNS = [("host", "Host", 18), ("reach", "Reachable", 12), ("state", "State", 11), ("gpus", "GPUs", 4),
           ("busy", "Busy", 4), ("idle", "Idle", 4), ("stale", "Stale", 7), ("mem", "Memory used", 16),
           ("age", "Sample", 14)]


def fleet_cells(row: HostRow, now_age_s: float | None) -> dict:
    if row.reachable is None:
        reach = Text("… waiting", style="dim")
    elif row.reachable:
        reach = Text("● yes", style="green")
    else:
        reach = Text("✖ no", style="bold red")
    mem = (f"{gib(row.memory_used_mib)}/{gib(row.memory_total_mib)}G"
           if row.memory_used_mib is not None and row.memory_total_mib is not None else "N/A")
    sample = "never" if now_age_s is None else f"{age(now_age_s)} ago"
    return {
        "host": safe_text(row.host + (" SIM" if row.simulated else "")),
        "reach": reach,
        "state": safe_text(row.state, style="" if row.state == "ok" else "bold red"),
        "gpus": "N/A" if row.gpus is None else str(row.gpus),
        "busy": str(row.busy), "idle": str(row.idle),
        "stale": Text(f" {row.stale} " if row.stale else "0", style="bold white on red" if row.stale else ""),
        "mem": mem,
        "age": Text(sample + (" ⚠" if row.sample_stale else ""), style="yellow" if row.sample_stale else ""),
    }


class FleetTable(SafeDataTable):
    DEFAULT_CSS = "FleetTable { height: auto; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self._cells: dict[str, dict] = {}

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def show(self, rows: Sequence[HostRow]) -> None:
        for row in rows:
            cells = fleet_cells(row, row.age_s)
            if row.host not in self._cells:
                self.add_row(*(cells[c] for c, _, _ in COLUMNS), key=row.host)
            else:
                old = self._cells[row.host]
                for column, value in cells.items():
                    if old.get(column) != value:
                        self.update_cell(row.host, column, value)
            self._cells[row.host] = cells

    @property
    def selected_name(self) -> str | None:
        if not self.row_count:
            return None
        key, _ = self.coordinate_to_cell_key(self.cursor_coordinate)
        return key.value
