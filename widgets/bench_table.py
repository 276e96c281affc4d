"""One row per level: status, progress, done/failed, throughput, live or final percentiles, why."""
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


def _bar(fraction: float | None) -> str:
    if fraction is None:
        return UNKNOWN
    filled = round(fraction * BAR)
    return "█" * filled + "░" * (BAR - filled) + f" {fraction * 100:3.0f}%"


def level_cells(level: LevelView) -> list[Text]:
    """The row for one level (plain data in, rich Text out)."""
    label, style = STATUS_STYLE.get(level.status, (level.status, ""))
    itl = (level.summary or {}).get("itl_ms", {}).get("p99") if level.summary else None
    note = level.explanation or ""
    if level.status == "running" and level.workers > 1:
        note = f"{level.workers} client processes"
    return [
        Text((level.label or "").removeprefix("c=") or str(level.concurrency), justify="right"),
        safe_text(label, style=style),
        Text(_bar(level.progress) if level.status != "skipped" else ""),
        Text(f"{level.completed}/{level.failed}", justify="right",
             style="red" if level.failed else ""),
        Text(_num(level.output_throughput, 2), justify="right"),
        Text(f"{_num(level.stat('ttft', 'p50'))} / {_num(level.stat('ttft', 'p99'))}", justify="right"),
        Text(f"{_num(level.stat('tpot', 'p50'))} / {_num(level.stat('tpot', 'p99'))}", justify="right"),
        Text(_num(itl), justify="right"),
        safe_text(note, style="red" if level.status == "failed" else "dim"),  # server error bodies
    ]


class BenchLevelTable(SafeDataTable):
    DEFAULT_CSS = "BenchLevelTable { height: auto; max-height: 14; width: 1fr; }"

    def on_mount(self) -> None:
        self.cursor_type = "row"
        self.zebra_stripes = True
        for name in COLUMNS:
            self.add_column(name, key=name)

    def show(self, levels: list[LevelView]) -> None:
        if self.row_count != len(levels):
            self.clear()
            for i, level in enumerate(levels):
                self.add_row(*level_cells(level), key=str(i))
            return
        for i, level in enumerate(levels):
            for name, cell in zip(COLUMNS, level_cells(level)):
                self.update_cell(str(i), name, cell, update_width=True)
