"""The fleet at scale: one row per host (sums and worst flag). Plain HostRow data in, cells out."""
from __future__ import annotations

from typing import Sequence

from rich.text import Text

from console.gpus.fleet_table import HostRow
from console.gpus.model import NA as _NA
from console.gpus.text import age

from .safe_table import SafeDataTable
from .gpu_cells import memory_cell, util_cell

# Notes take what is left of the line, so nothing before them is ever cut.
COLUMNS = [("host", "Host", 22), ("state", "State", 13), ("gpus", "GPUs", 4), ("util", "Util (mean)", 15),
           ("mem", "Memory GiB", 19), ("temp", "Max C", 5), ("power", "Power W", 7), ("age", "Age", 6),
           ("notes", "Notes", None)]
# In a narrow terminal these go first, least useful first; State (the flag) and Notes always stay,
# and Enter on a host shows its note whole.
DROP_ORDER = ("power", "temp", "gpus", "util", "age")
NOTES_ROOM = 36  # what a note needs to say "8 STALE; XID 79 on GPU 1: GPU has fallen off the bus"
PAD = 2          # a DataTable column's padding


def columns_for(width: int | None) -> list[tuple[str, str, int | None]]:
    """The columns that fit `width` cells with room for the notes; Notes gets the rest."""
    cols = list(COLUMNS)
    if width is None:
        return cols
    fixed = lambda: sum(w + PAD for _, _, w in cols if w is not None)  # noqa: E731
    for key in DROP_ORDER:
        if fixed() + NOTES_ROOM + PAD <= width:
            break
        cols = [c for c in cols if c[0] != key]
    room = max(NOTES_ROOM, width - fixed() - PAD - 1)
    return [(k, label, room if k == "notes" else w) for k, label, w in cols]
STATE_STYLES = {"unreachable": "bold white on red", "xid": "bold white on red", "stale": "bold white on red",
                "no signal": "bold black on yellow", "hot": "bold red", "throttled": "magenta",
                "orphan-memory": "bold black on yellow", "busy": "green", "idle": "dim"}


def _num(value, fmt: str = "{:.0f}") -> Text:
    return Text("N/A", style="dim") if value is None else Text(fmt.format(value))


def host_cells(row: HostRow) -> list:
    name = row.host if len(row.host) <= 22 else row.host[:21] + "…"
    return [
        Text(name, style="bold" if row.worst in ("unreachable", "xid", "stale") else ""),
        Text(f" {row.worst} ", style=STATE_STYLES.get(row.worst, "")),
        _num(row.gpus),
        util_cell(row.util_pct if row.util_pct is not None else _NA),
        memory_cell(row.memory_used_mib if row.memory_used_mib is not None else _NA,
                    row.memory_total_mib if row.memory_total_mib is not None else _NA),
        _num(row.temp_max_c),
        _num(row.power_w),
        # a fresh row says "live"; only an old one shows its age, so the column moves when it matters
        Text(age(row.age_s), style="bold yellow") if row.sample_stale or row.state == "unreachable"
        else Text("live", style="dim green"),
        Text(row.notes),
    ]


class FleetHostsTable(SafeDataTable):
    """Hosts of a fleet, redrawn from the current sort and filter."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.hosts: list[str] = []
        self._cells: dict[str, list] = {}
        self._rows: list[HostRow] = []
        self.rebuilds = 0
        self.shown_columns = columns_for(None)

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for key, label, width in self.shown_columns:
            self.add_column(label, key=key, width=width)

    def on_resize(self, event) -> None:
        wanted = columns_for(event.size.width)
        if wanted != self.shown_columns:
            self.shown_columns = wanted
            self.clear(columns=True)
            self._add_columns()
            self.hosts = []
            self.show(self._rows)

    def show(self, rows: Sequence[HostRow]) -> None:
        """Rebuild when the hosts or their order change; otherwise update only the cells that changed."""
        self._rows = list(rows)
        keys = [key for key, _label, _width in COLUMNS]
        shown = [key for key, _label, _width in self.shown_columns]
        cells = {r.host: [c for k, c in zip(keys, host_cells(r)) if k in shown] for r in rows}
        order = [r.host for r in rows]
        if order != self.hosts:
            selected = self.selected_host
            self.clear()
            for host in order:
                self.add_row(*cells[host], key=host)
            self.hosts, self._cells = order, cells
            self.rebuilds += 1
            if selected in self.hosts:
                self.move_cursor(row=self.hosts.index(selected))
            return
        for host in order:
            old = self._cells[host]
            for i, value in enumerate(cells[host]):
                if old[i] != value:
                    self.update_cell(host, shown[i], value)
        self._cells = cells

    @property
    def selected_host(self) -> str | None:
        if not self.hosts or not 0 <= self.cursor_row < len(self.hosts):
            return None
        return self.hosts[self.cursor_row]
