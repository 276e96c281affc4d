"""The campaign grid: configs down, levels across, each cell its state or tok/s. Plain data in, cells out."""
from __future__ import annotations

from typing import Sequence

from rich.text import Text

from console.safe_text import safe_text

from .safe_table import SafeDataTable

STATE_STYLES = {"queued": "dim", "launching": "cyan", "waiting": "cyan", "sweeping": "bold cyan",
                "stopping": "cyan", "done": "green", "crashed": "bold white on red", "start-failed": "bold red",
                "interrupted": "yellow", "skipped": "dim"}


def level_cell(cell: dict, concurrency: int) -> Text:
    for level in cell.get("levels") or []:
        if level.get("concurrency") == concurrency:
            tps = level.get("output_throughput")
            if level.get("status") == "ok" and tps is not None:
                return Text(f"✔ {tps:,.1f}", style="green")
            return safe_text(f"✖ {level.get('status')}", style="bold red")
    live = cell.get("live")
    if live and live.get("concurrency") == concurrency:
        tps = live.get("tok_s")
        return Text(f"▶ {tps:,.0f}/s" if tps is not None else "▶ …", style="bold cyan")
    if cell.get("status") in ("crashed", "start-failed", "skipped", "interrupted"):
        return Text("–", style="dim")
    return Text("·", style="dim")


def row_cells(cell: dict, levels: Sequence[int]) -> list:
    status = cell.get("status", "?")
    label = cell.get("crash_class") if status == "crashed" and cell.get("crash_class") else status
    why = cell.get("crash_class") or cell.get("note") or ""
    return [safe_text(cell.get("name", "?")), safe_text(f" {label} ", style=STATE_STYLES.get(status, "")),
            *(level_cell(cell, c) for c in levels), safe_text(why, style="dim")]


class CampaignGrid(SafeDataTable):
    """One row per cell of the campaign (config or grid combination)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.levels: list[int] = []

    def show(self, cells: Sequence[dict], levels: Sequence[int]) -> None:
        if list(levels) != self.levels or not self.columns:
            self.clear(columns=True)
            self.levels = list(levels)
            self.add_column("config", key="config", width=40)
            self.add_column("state", key="state", width=22)
            for c in self.levels:
                self.add_column(f"c={c}", key=f"c{c}", width=11)
            self.add_column("crash / note", key="note")
        keep = self.cursor_row
        self.clear()
        for cell in cells:
            self.add_row(*row_cells(cell, self.levels), key=cell.get("name"))
        if 0 <= keep < len(cells):
            self.move_cursor(row=keep)
