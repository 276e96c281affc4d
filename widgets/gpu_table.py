"""The per-GPU table. Rows are keyed by GPU and cells are updated in place,
only where their text changed, so a sample costs a few cell updates, not a
rebuilt widget.

The columns fit the pane's width. Wide (200+ columns) shows GPU names whole.
When the pane is narrower than the full table, columns give way in this
order until the table fits: the 5-minute sparkline goes, SM MHz goes, the
name shortens (vendor prefix first), the util and memory bars shorten.
GPU, Util %, Memory numbers, Temp, Power, P-state and Flags always stay, and
Flags is never cut: it is the column that says what needs action.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Sequence

from rich.text import Text
from textual.widgets.data_table import ColumnKey

from console.gpus.model import GPU, known
from console.gpus.text import plain, power, watts
from console.safe_text import safe_cell

from .gpu_cells import badges, memory_cell, sparkline, temp_cell, util_cell
from .safe_table import SafeDataTable

SPARK_WIDTH = 16
COLUMNS = [("gpu", "GPU", 3), ("name", "Name", 26), ("util", "Util", 15), ("mem", "Memory", 21),
           ("temp", "Temp", 4), ("power", "Power", 9), ("sm", "SM MHz", 6), ("p", "P", 3),
           ("spark", "util, 5 min", SPARK_WIDTH), ("flags", "Flags", 28)]


def power_text(draw: Any, limit: Any) -> str:
    """'34/700W'; with no known limit just '34 W' (never '34/N/AW'); 'N/A' when the draw is unknown too."""
    if known(limit):
        return power(draw, limit)
    if known(draw):
        return f"{watts(draw)} W"
    return "N/A"


@dataclass(frozen=True)
class Fit:
    """How the table is laid out at one width."""

    columns: tuple[tuple[str, str, int | None], ...]
    name_width: int = 26
    util_bar: int = 10
    mem_bar: int = 9
    short_names: bool = False


FLAGS_ROOM = 14  # what a row's flags usually need ("IDLE", " STALE ", "THROTTLED (…)" wider)
WIDE_NAME = 48
FLAGS_SPARE = 8  # kept for flags wider than FLAGS_ROOM (" STALE ", "THROTTLED (…)") before a name grows


def fit_for(width: int) -> Fit:
    """The layout for a pane `width` cells wide, following the shrink order above."""
    if width >= 200:
        cols = tuple((k, label, WIDE_NAME if k == "name" else w) for k, label, w in COLUMNS)
        return Fit(_flags_auto(cols), name_width=WIDE_NAME)
    fit = Fit(_flags_auto(tuple(COLUMNS)))
    steps = [
        lambda f: replace(f, columns=tuple(c for c in f.columns if c[0] != "spark")),
        lambda f: replace(f, columns=tuple(c for c in f.columns if c[0] != "sm")),
        lambda f: replace(f, short_names=True, name_width=16),
        lambda f: replace(f, util_bar=5, mem_bar=5),
        lambda f: replace(f, name_width=12),
    ]
    for step in steps:
        if _needed(fit) <= width:
            break
        fit = step(fit)
    slack = width - _needed(fit) - FLAGS_SPARE
    if not fit.short_names and slack > 0:  # room to spare: the name gets it before it is cut
        fit = replace(fit, name_width=min(WIDE_NAME, fit.name_width + slack))
    widths = {"name": fit.name_width, "util": fit.util_bar + 5, "mem": fit.mem_bar + 12}
    return replace(fit, columns=tuple((k, label, widths.get(k, w)) for k, label, w in fit.columns))


def _flags_auto(cols) -> tuple:
    return tuple((k, label, None if k == "flags" else w) for k, label, w in cols)


def _needed(fit: Fit) -> int:
    widths = {"name": fit.name_width, "util": fit.util_bar + 5, "mem": fit.mem_bar + 12}
    cells = sum(widths.get(k, w) if w is not None else FLAGS_ROOM for k, _, w in fit.columns)
    return cells + 2 * len(fit.columns) + 2  # cell padding, and the scrollbar's room


def _name(gpu: GPU, fit: Fit) -> str:
    name = plain(gpu.name)
    if name.endswith("..."):   # nvidia-smi's own truncation in the table form
        name = name[:-3] + "…"
    if fit.short_names:
        name = name.removeprefix("NVIDIA ")
    return name if len(name) <= fit.name_width else name[:fit.name_width - 1] + "…"


def gpu_cells(gpu: GPU, spark: Sequence[Any], fit: Fit | None = None) -> dict[str, Any]:
    fit = fit or Fit(tuple(COLUMNS))
    stale = "stale" in gpu.flags
    return {
        "gpu": Text(f"{plain(gpu.index):>3}", style="bold red" if stale else ""),
        "name": _name(gpu, fit),
        "util": util_cell(gpu.util_gpu_pct, width=fit.util_bar, stale=stale),
        "mem": memory_cell(gpu.memory_used_mib, gpu.memory_total_mib, width=fit.mem_bar),
        "temp": temp_cell(gpu.temperature_c, "hot" in gpu.flags),
        "power": Text(power_text(gpu.power_draw_w, gpu.power_limit_w).rjust(9)),
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
        self.rebuilds = 0       # whole-table rebuilds (only when the set of GPUs or the width changes)
        self.cell_updates = 0
        self.fit = fit_for(160)
        self._last: tuple[Sequence[GPU], dict[str, Sequence[Any]]] = ((), {})

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for key, label, width in self.fit.columns:
            self.add_column(label, key=key, width=width)

    def on_resize(self) -> None:
        width = self.parent.size.width if self.parent is not None else self.size.width
        fit = fit_for(width or 160)
        if fit != self.fit:
            self.fit = fit
            self.clear(columns=True)
            self._add_columns()
            self._cells, self._order = {}, []
            self.show(*self._last)

    def show(self, gpus: Sequence[GPU], sparks: dict[str, Sequence[Any]]) -> None:
        self._last = (gpus, sparks)
        keys = [c for c, _, _ in self.fit.columns]
        rows = [(str(g.key), {k: v for k, v in gpu_cells(g, sparks.get(str(g.key), ()), self.fit).items() if k in keys})
                for g in gpus]
        order = [k for k, _ in rows]
        self._fit_flags([cells for _, cells in rows])
        if order != self._order:
            self.clear()
            self._cells = {}
            for key, cells in rows:
                self.add_row(*(cells[c] for c in keys), key=key)
                self._cells[key] = cells
            self._order = order
            self.rebuilds += 1
            return
        for key, cells in rows:
            old = self._cells[key]
            for column, value in cells.items():
                if old.get(column) != value:
                    # Flags has no fixed width: it grows with what a sample flags, never cuts it
                    self.update_cell(key, column, value, update_width=column == "flags")
                    self.cell_updates += 1
            self._cells[key] = cells

    def _fit_flags(self, rows: Sequence[dict[str, Any]]) -> None:
        """Size Flags to its widest cell before the cells go in.

        Textual measures an auto-width column when the app is next idle, and caches drawn cells
        by update, not by width: a frame drawn before that pass keeps a widened flag cut
        ("STAL") until some later update. Sized first, the idle pass has nothing to change."""
        column = self.columns.get(ColumnKey("flags"))
        if column is None or not column.auto_width:
            return
        cells = [safe_cell(cells["flags"]) for cells in rows if "flags" in cells]
        column.content_width = max([column.label.cell_len, *(c.cell_len for c in cells if isinstance(c, Text))])

    def reset(self) -> None:
        self._last = ((), {})
        self.clear()
        self._cells = {}
        self._order = []
