"""One row per level: status, progress, done/failed, throughput, live or final percentiles, why.

The note ("why") is never cut: it takes the width the other columns leave
and wraps onto more lines. Narrower than NARROW columns, the table first
gives way in this order: the progress bar column goes (a running level shows
its percentage in the status cell), then ITL p99 goes.
"""
from __future__ import annotations

from rich.text import Text

from console.bench.live import LevelView
from console.fmt import UNKNOWN, number
from console.safe_text import safe_text

from .safe_table import SafeDataTable

COLUMNS = ("conc", "status", "progress", "done/fail", "out tok/s", "TTFT p50/p99 ms",
           "TPOT p50/p99 ms", "ITL p99", "note")
STATUS_STYLE = {"ok": ("✔ ok", "green"), "partial": ("◐ partial", "yellow"), "failed": ("✖ failed", "red"),
                "skipped": ("– skipped", "dim"), "running": ("■ running", "cyan"), "pending": ("· pending", "dim")}
BAR = 10


def _num(value: float | None, digits: int = 1) -> str:
    return number(value, digits)


def _ms(value: float | None) -> str:
    """A latency that fits its half of a p50/p99 cell: one decimal below 100 ms, none above,
    so a p99 is never cut shorter than its p50 ('5,718.8 / 5,718' read as smaller)."""
    return number(value, 1 if value is None or abs(value) < 100 else 0)


def _bar(fraction: float | None) -> str:
    if fraction is None:
        return UNKNOWN
    filled = round(fraction * BAR)
    return "█" * filled + "░" * (BAR - filled) + f" {fraction * 100:3.0f}%"


def level_cells(level: LevelView) -> list[Text]:
    """The row for one level (plain data in, rich Text out)."""
    label, style = STATUS_STYLE.get(level.status, (level.status, ""))
    stopped = bool((level.summary or {}).get("stopped"))
    if stopped and level.status != "ok":  # the operator ended it: not a failure of the server
        label, style = "■ stopped", "yellow"
    itl = (level.summary or {}).get("itl_ms", {}).get("p99") if level.summary else None
    note = level.explanation or ""
    if level.status == "running" and level.workers > 1:
        note = f"{level.workers} client processes"
    return [
        Text((level.label or "").removeprefix("c=") or str(level.concurrency), justify="right"),
        safe_text(label, style=style),
        Text(_bar(level.progress) if level.status != "skipped" else ""),
        Text(f"{level.completed}/{level.failed}", justify="right",
             style="red" if level.failed and not stopped else ""),
        Text(_num(level.output_throughput, 2), justify="right"),
        Text(f"{_ms(level.stat('ttft', 'p50'))} / {_ms(level.stat('ttft', 'p99'))}", justify="right"),
        Text(f"{_ms(level.stat('tpot', 'p50'))} / {_ms(level.stat('tpot', 'p99'))}", justify="right"),
        Text(_num(itl), justify="right"),
        safe_text(note, style="red" if level.status == "failed" else "dim"),  # server error bodies
    ]


NARROW = 140
NARROW_DROPS = ("progress", "ITL p99")
NOTE_MIN = 20


def narrow_cells(level: LevelView) -> list[Text]:
    """The row without the columns a narrow table drops; the progress moves into the status cell."""
    cells = dict(zip(COLUMNS, level_cells(level)))
    if level.status == "running" and level.progress is not None:
        cells["status"] = Text(f"■ {level.progress * 100:.0f}%", style="cyan")
    return [cell for name, cell in cells.items() if name not in NARROW_DROPS]


class BenchLevelTable(SafeDataTable):
    DEFAULT_CSS = "BenchLevelTable { height: auto; max-height: 14; width: 1fr; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(**kwargs)
        self.narrow = False
        self._fitted = False  # columns laid out for the current width (the note wraps in what is left)
        self._levels: list[LevelView] = []
        self._fitted_width = 0
        self._notes: list[str] | None = None  # the notes drawn: rows are rebuilt only when one changes

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for name in COLUMNS:
            self.add_column(name, key=name)

    def on_resize(self, event) -> None:
        if not event.size.width or event.size.width == self._fitted_width:
            return  # a height change (rows wrapping) needs no new columns
        self._fitted_width = event.size.width
        self.narrow = self.size.width < NARROW
        self.clear(columns=True)
        names = [n for n in COLUMNS if not (self.narrow and n in NARROW_DROPS)]
        for name in names:
            self.add_column(name, key=name, width=self._note_width(names) if name == "note" else None)
        self._fitted = True
        self._notes = None
        self.show(self._levels)

    def _note_width(self, names: list[str]) -> int:
        fixed = {"conc": 4, "status": 9, "progress": 15, "done/fail": 9, "out tok/s": 9, "TTFT p50/p99 ms": 17,
                 "TPOT p50/p99 ms": 15, "ITL p99": 7}
        used = sum(fixed.get(n, 0) + 2 for n in names if n != "note") + 2
        return max(NOTE_MIN, self.size.width - used - 2)

    def show(self, levels: list[LevelView]) -> None:
        self._levels = levels
        if self._fitted:
            rows = [narrow_cells(level) if self.narrow else level_cells(level) for level in levels]
            notes = [cells[-1].plain for cells in rows]
            keys = [str(k.value) for k in self.columns]
            if notes == self._notes and self.row_count == len(rows):  # same heights: update in place
                for i, cells in enumerate(rows):
                    for key, cell in zip(keys[:-1], cells[:-1]):
                        self.update_cell(str(i), key, cell)
                return
            # a note changed: rebuilt, so each wrapped note gets its height
            self._notes = notes
            row = self.cursor_row
            self.clear()
            for i, cells in enumerate(rows):
                cells[-1] = Text(cells[-1].plain, style=cells[-1].style, overflow="fold")
                self.add_row(*cells, key=str(i), height=None)
            if levels:
                self.move_cursor(row=min(row, len(levels) - 1), animate=False)
            return
        if self.row_count != len(levels):
            self.clear()
            for i, level in enumerate(levels):
                self.add_row(*level_cells(level), key=str(i))
            return
        for i, level in enumerate(levels):
            for name, cell in zip(COLUMNS, level_cells(level)):
                self.update_cell(str(i), name, cell, update_width=True)
