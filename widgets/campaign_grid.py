"""The campaign grid: configs down, levels across, each cell its state or tok/s. Plain data in, cells out."""
from __future__ import annotations

from typing import Sequence

from rich.text import Text

from console.fmt import middle_cut
from console.safe_text import safe_text

from .safe_table import SafeDataTable

STATE_STYLES = {"queued": "dim", "launching": "cyan", "waiting": "cyan", "sweeping": "bold cyan",
                "stopping": "cyan", "done": "green", "crashed": "bold white on red", "start-failed": "bold red",
                "interrupted": "yellow", "skipped": "dim"}


def _number(value) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def level_cell(cell: dict, concurrency: int) -> Text:
    levels = cell.get("levels")
    for level in levels if isinstance(levels, list) else []:
        if isinstance(level, dict) and level.get("concurrency") == concurrency:
            tps = level.get("output_throughput")
            if level.get("status") == "ok" and _number(tps):
                ci = ((level.get("stats") or {}).get("tps") or {}).get("ci") if isinstance(level.get("stats"), dict) else None
                shown = isinstance(ci, list) and len(ci) == 2 and all(_number(c) for c in ci)
                half = f"±{max(tps - ci[0], ci[1] - tps):,.1f}" if shown else ""
                return Text(f"✔ {tps:,.1f}{half}", style="green")
            return safe_text(f"✖ {level.get('status')}", style="bold red")
    live = cell.get("live")
    if isinstance(live, dict) and live.get("concurrency") == concurrency:
        tps = live.get("tok_s")
        return Text(f"▶ {tps:,.0f}/s" if _number(tps) else "▶ …", style="bold cyan")
    if cell.get("status") in ("crashed", "start-failed", "skipped", "interrupted"):
        return Text("–", style="dim")
    return Text("·", style="dim")


def state_label(cell: dict) -> str:
    status = cell.get("status", "?")
    return cell.get("crash_class") if status == "crashed" and cell.get("crash_class") else status


def column_widths(cells: Sequence[dict]) -> tuple[int, int]:
    """Config and state columns as wide as their longest entry (capped), so a 100-column pane shows every level."""
    name = max((len(str(c.get("name", ""))) for c in cells), default=0)
    state = max((len(str(state_label(c))) + 2 + (len(f" ×{c['repeats']}") if c.get("repeats") else 0)
                 for c in cells), default=0)
    return min(40, max(12, name)), min(26, max(9, state))


LEVEL_WIDTH = 13


def fit_columns(widths: tuple[int, int], levels: int, room: int) -> tuple[int, int, bool]:
    """Config and state widths and whether the note column shows, in `room` characters (0: not laid
    out yet, as asked). The levels are what the grid is for: every one stays whole; the note goes
    first, then the config names and then the states are cut (in the middle) to what is left."""
    name, state = widths
    if room <= 0:
        return name, state, True
    pads = 2 * (2 + levels)  # each column pads a cell a side
    left = room - pads - levels * LEVEL_WIDTH - 1  # a scrollbar
    note = left - name - state >= 20 + 2
    if name + state > left:  # the names give way first (cut in the middle), down to 24; then the states
        name = max(min(name, 24), left - state)
    if name + state > left:
        state = max(9, left - name)
        name = max(12, left - state)
    return name, state, note


def row_cells(cell: dict, levels: Sequence[int], widths: tuple[int, int] = (0, 0), note: bool = True) -> list:
    status = cell.get("status", "?")
    label = state_label(cell)
    if cell.get("repeats"):
        label = f"{label} ×{cell['repeats']}"
    # the state names a crash's class; the note says where its record is
    why = f"crash record {cell['crash_record']}" if status == "crashed" and cell.get("crash_record") \
        else cell.get("note") or cell.get("crash_class") or ""
    if cell.get("crashed_at"):
        why = f"crashed at c={cell['crashed_at']} · {why}"
    name = str(cell.get("name", "?"))
    if widths[0]:
        name, label = middle_cut(name, widths[0]), middle_cut(label, widths[1] - 2)
    return [safe_text(name), safe_text(f" {label} ", style=STATE_STYLES.get(status, "")),
            *(level_cell(cell, c) for c in levels), *([safe_text(why, style="dim")] if note else [])]


class CampaignGrid(SafeDataTable):
    """One row per cell of the campaign (config or grid combination)."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self.levels: list[int] = []
        self.widths: tuple[int, int] = (0, 0)
        self.note = True

    def show(self, cells: Sequence[dict], levels: Sequence[int]) -> None:
        self._shown = (list(cells), list(levels))
        room = self.scrollable_content_region.width if self.is_mounted else 0
        name, state, note = fit_columns(column_widths(cells), len(levels), room)
        widths = (name, state)
        if list(levels) != self.levels or widths != self.widths or note != self.note or not self.columns:
            self.clear(columns=True)
            self.levels = list(levels)
            self.widths = widths
            self.note = note
            self.add_column("config", key="config", width=widths[0])
            self.add_column("state", key="state", width=widths[1])
            for c in self.levels:
                self.add_column(f"c={c}", key=f"c{c}", width=LEVEL_WIDTH)
            if note:
                self.add_column("crash / note", key="note")
        keep = self.cursor_row
        self.clear()
        for cell in cells:
            self.add_row(*row_cells(cell, self.levels, widths if room > 0 else (0, 0), note), key=cell.get("name"))
        if 0 <= keep < len(cells):
            self.move_cursor(row=keep)

    def on_resize(self, event) -> None:
        """The columns fitted to the new width (the first draw may come before the grid is laid out)."""
        if getattr(self, "_shown", None) is not None:
            self.call_after_refresh(self.show, *self._shown)
