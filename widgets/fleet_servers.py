"""Inference servers seen through Prometheus, fleet-wide. Plain ServerRow data in, cells out."""
from __future__ import annotations

from typing import Sequence

from rich.text import Text

from console.gpus.dcgm import clean
from console.gpus.prometheus import ServerRow

from .safe_table import SafeDataTable

COLUMNS = [("instance", "Instance", 24), ("family", "Server", 9), ("model", "Model", 30), ("running", "Running", 7),
           ("waiting", "Waiting", 7), ("kv", "KV cache", 8), ("tps", "gen tok/s", 9)]


def _num(value, fmt: str) -> Text:
    return Text("N/A", style="dim") if value is None else Text(fmt.format(value))


def server_cells(row: ServerRow) -> list:
    return [Text(clean(row.instance)), Text(clean(row.family)), Text(clean(row.model or "N/A")),
            _num(row.running, "{:.0f}"), _num(row.waiting, "{:.0f}"),
            _num(None if row.kv_cache is None else row.kv_cache * 100, "{:.0f}%"), _rate(row)]


def _rate(row: ServerRow) -> Text:
    """The generation rate; a counter that moves only at request end says so while requests run."""
    if row.gen_tok_s is None and row.counted_at_request_end:
        return Text("at finish", style="dim")
    return _num(row.gen_tok_s, "{:.1f}")


class FleetServersTable(SafeDataTable):
    DEFAULT_CSS = "FleetServersTable { height: auto; max-height: 10; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="none", **kwargs)

    def on_mount(self) -> None:
        for key, label, width in COLUMNS:
            self.add_column(label, key=key, width=width)

    def show(self, rows: Sequence[ServerRow]) -> None:
        self.clear()
        for r in rows:
            self.add_row(*server_cells(r))
