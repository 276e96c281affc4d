"""The per-GPU table. Rows are keyed by GPU and cells are updated in place,
only where their text changed, so a sample costs a few cell updates, not a
rebuilt widget."""
from __future__ import annotations

from typing import Any, Sequence

from rich.text import Text

from console.gpus.model import GPU, known
from console.gpus.text import plain, power

from .gpu_cells import badges, memory_cell, sparkline, temp_cell, util_cell
from .safe_table import SafeDataTable

SPARK_WIDTH = 16
COLUMNS = [("gpu", "GPU", 3), ("name", "Name", 26), ("util", "Util", 15), ("mem", "Memory", 21),
           ("temp", "Temp", 4), ("power", "Power", 9), ("sm", "SM MHz", 6), ("p", "P", 3),
           ("spark", "util, 5 min", SPARK_WIDTH), ("flags", "Flags", 28)]


def gpu_cells(gpu: GPU, spark: Sequence[Any]) -> dict[str, Any]:
    stale = "stale" in gpu.flags
    name = plain(gpu.name)
    if name.endswith("..."):   # nvidia-smi's own truncation in the table form
        name = name[:-3] + "…"
    return {
        "gpu": Text(f"{plain(gpu.index):>3}", style="bold red" if stale else ""),
        "name": name if len(name) <= 26 else name[:25] + "…",
        "util": util_cell(gpu.util_gpu_pct, stale=stale),
        "mem": memory_cell(gpu.memory_used_mib, gpu.memory_total_mib),
        "temp": temp_cell(gpu.temperature_c, "hot" in gpu.flags),
        "power": Text(power(gpu.power_draw_w, gpu.power_limit_w).rjust(9)),
        "sm": Text(f"{gpu.sm_clock_mhz:>6}" if known(gpu.sm_clock_mhz) else "   N/A"),
        "p": plain(gpu.pstate),
        "spark": sparkline(spark),
        "flags": badges(gpu.flags, gpu.throttle_reasons),
    }


class GPUTable(SafeDataTable):
    """One row per GPU."""

    DEFAULT_CSS = "GPUTable { height: auto; max-height: 20; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, **kwargs)
        self._cells: dict[str, dict[str, Any]] = {}
        self._order: list[str] = []
        self.rebuilds = 0       # whole-table rebuilds (only when the set of GPUs changes)
        self.cell_updates = 0

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def show(self, gpus: Sequence[GPU], sparks: dict[str, Sequence[Any]]) -> None:
        rows = [(str(g.key), gpu_cells(g, sparks.get(str(g.key), ()))) for g in gpus]
        order = [k for k, _ in rows]
        if order != self._order:
            self.clear()
            self._cells = {}
            for key, cells in rows:
                self.add_row(*(cells[c] for c, _, _ in COLUMNS), key=key)
                self._cells[key] = cells
            self._order = order
            self.rebuilds += 1
            return
        for key, cells in rows:
            old = self._cells[key]
            for column, value in cells.items():
                if old.get(column) != value:
                    self.update_cell(key, column, value)
                    self.cell_updates += 1
            self._cells[key] = cells

    def reset(self) -> None:
        self.clear()
        self._cells = {}
        self._order = []
