"""The fleet at scale: one row per host (sums and worst flag). Plain HostRow data in, cells out."""
from __future__ import annotations

from typing import Sequence

from rich.text import Text
from textual.binding import Binding
from textual.message import Message

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
    """Hosts of a fleet, a screenful at a time.

    A fleet of ten thousand GPUs has over a thousand hosts; a table holding a
    row for each, rebuilt whenever the order changes, takes seconds per key.
    This one holds the rows on screen only (`window` of them, from `top`):
    the rest are plain data in `hosts`, and the cursor keys, paging keys and
    the mouse wheel move the window over them. Each sample rewrites the
    cells of the window that changed, so the cost follows the screen, not
    the fleet.
    """

    BINDINGS = [
        Binding("down,j", "cursor_down", "next host", show=False, key_display="↓ j"),
        Binding("up,k", "cursor_up", "previous host", show=False, key_display="↑ k"),
        Binding("pagedown,ctrl+f,space", "page_down", "next page", show=False, key_display="PgDn space ctrl+f"),
        Binding("pageup,ctrl+b", "page_up", "previous page", show=False, key_display="PgUp ctrl+b"),
        Binding("home,ctrl+home,g", "scroll_top", "first host", show=False, key_display="Home g"),
        Binding("end,ctrl+end,G", "scroll_bottom", "last host", show=False, key_display="End G"),
    ]
    DEFAULT_WINDOW = 40   # rows held before the table knows its height

    class Moved(Message):
        """The window now starts at another host, or holds another number of them (the table grew
        or shrank); whoever says which rows are on screen redraws."""

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=True, **kwargs)
        self.hosts: list[str] = []           # every host, in the order shown
        self.top = 0                         # index in `hosts` of the first row on screen
        self._drawn_window: int | None = None  # rows the window held when last drawn at a known height
        self._rows: list[HostRow] = []
        self._shown: list[str] = []          # the hosts the table holds now (the window)
        self._cells: dict[str, list] = {}
        self._index_of: tuple[list | None, dict[str, int]] = (None, {})   # (for these rows, host -> index)
        self.rebuilds = 0
        self.shown_columns = columns_for(None)

    def on_mount(self) -> None:
        self._add_columns()

    def _add_columns(self) -> None:
        for key, label, width in self.shown_columns:
            self.add_column(label, key=key, width=width)

    @property
    def window(self) -> int:
        """How many host rows fit under the header."""
        height = self.size.height
        return max(1, height - 1) if height > 1 else self.DEFAULT_WINDOW

    @property
    def position(self) -> int:
        """The selected host's index in `hosts`."""
        return min(self.top + self.cursor_row, max(0, len(self.hosts) - 1))

    @property
    def span(self) -> tuple[int, int, int]:
        """(first, last, total): the hosts on screen, counted from 1."""
        return (min(self.top + 1, len(self.hosts)), min(self.top + self.window, len(self.hosts)), len(self.hosts))

    def on_resize(self, event) -> None:
        wanted = columns_for(event.size.width)
        if wanted != self.shown_columns:
            self.shown_columns = wanted
            self.clear(columns=True)
            self._add_columns()
            self._shown = []
        self.go_to(self.position)

    def show(self, rows: Sequence[HostRow]) -> None:
        """The hosts in this order; the selected host stays selected, on the same screen line where it can."""
        selected, line = self.selected_host, self.cursor_row
        self._rows = list(rows)
        self.hosts = [r.host for r in self._rows]
        if selected is not None and selected in self._index():
            at = self._index()[selected]
            self.top = at - line
            self._draw(at)
        else:
            self._draw(min(self.position, max(0, len(self.hosts) - 1)))

    def _index(self) -> dict[str, int]:
        if self._index_of[0] is not self._rows:
            self._index_of = (self._rows, {h: i for i, h in enumerate(self.hosts)})
        return self._index_of[1]

    def go_to(self, index: int) -> None:
        """Select the host at `index` in `hosts`, moving the window as little as needed."""
        self._draw(index)

    def _draw(self, cursor: int, was: int | None = None) -> None:
        """Fill the window so that it holds host `cursor`; `was`: where the window started before a
        move that set `top` itself (a page), so that the move is still told."""
        total, window = len(self.hosts), self.window
        was = self.top if was is None else was
        # the table grew or shrank (the filter line opened or closed): the last row shown moved
        resized = self._drawn_window is not None and window != self._drawn_window
        cursor = max(0, min(cursor, total - 1))
        if cursor < self.top:
            self.top = cursor
        elif cursor >= self.top + window:
            self.top = cursor - window + 1
        self.top = max(0, min(self.top, total - window))
        rows = self._rows[self.top:self.top + window]
        keys = [key for key, _label, _width in COLUMNS]
        shown = [key for key, _label, _width in self.shown_columns]
        cells = {r.host: [c for k, c in zip(keys, host_cells(r)) if k in shown] for r in rows}
        order = [r.host for r in rows]
        if order != self._shown:
            self.clear()
            for host in order:
                self.add_row(*cells[host], key=host)
            self._shown = order
            self.rebuilds += 1
        else:
            for host in order:
                old = self._cells[host]
                for i, value in enumerate(cells[host]):
                    if old[i] != value:
                        self.update_cell(host, shown[i], value)
        self._cells = cells
        if order and self.cursor_row != cursor - self.top:
            self.move_cursor(row=cursor - self.top, scroll=False)
        self._drawn_window = window if self.size.height > 1 else None
        if self.top != was or resized:
            self.post_message(self.Moved())

    def cell_text(self, host: str, column: str) -> str:
        """What a host's cell says, on screen or not."""
        row = self._rows[self._index()[host]]
        keys = [key for key, _label, _width in COLUMNS]
        return str(host_cells(row)[keys.index(column)])

    # the keys move over every host, not over the rows the table holds
    def action_cursor_down(self) -> None:
        self.go_to(self.position + 1)

    def action_cursor_up(self) -> None:
        self.go_to(self.position - 1)

    def action_page_down(self) -> None:
        self._scroll(self.window)

    def action_page_up(self) -> None:
        self._scroll(-self.window)

    def action_scroll_top(self) -> None:
        self.go_to(0)

    def action_scroll_bottom(self) -> None:
        self.go_to(len(self.hosts) - 1)

    def _on_mouse_scroll_down(self, event) -> None:
        event.stop()
        event.prevent_default()
        self._scroll(3)

    def _on_mouse_scroll_up(self, event) -> None:
        event.stop()
        event.prevent_default()
        self._scroll(-3)

    def _scroll(self, by: int) -> None:
        """Move the window `by` hosts, the cursor keeping its line on screen."""
        line, was = self.cursor_row, self.top
        self.top = max(0, self.top + by)
        self._draw(min(self.top + line, len(self.hosts) - 1), was)

    @property
    def selected_host(self) -> str | None:
        if not self.hosts or not self._shown or not 0 <= self.cursor_row < len(self._shown):
            return None
        return self._shown[self.cursor_row]
