"""The process table under the GPU rows; redrawn only when the list changes."""
from __future__ import annotations

from typing import Sequence


from console.gpus.model import GPUProcess
from console.gpus.text import mib, plain

from .safe_table import SafeDataTable


class GPUProcessTable(SafeDataTable):
    DEFAULT_CSS = "GPUProcessTable { height: auto; max-height: 12; }"

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", **kwargs)
        self._shown: tuple = ()

    def on_mount(self) -> None:
        self.add_column("PID", key="pid", width=8)
        self.add_column("GPU", key="gpu", width=3)
        self.add_column("Memory", key="mem", width=10)
        self.add_column("CPU%", key="cpu", width=6)
        self.add_column("RSS", key="rss", width=10)
        self.add_column("Type", key="type", width=4)
        self.add_column("Config", key="config", width=24)
        self.add_column("Command", key="cmd")

    def show(self, processes: Sequence[GPUProcess], owners: dict[int, str] | None = None) -> None:
        """`owners` maps a pid to the launch config it belongs to ("—": not launched by gpudeck).
        Drawn in the order given (the pane sorts: console/gpus/proc_stats.py)."""
        owners = owners or {}
        rows = tuple((plain(p.pid).rjust(8), plain(p.gpu_index).rjust(3), mib(p.used_memory_mib).rjust(10),
                      plain(p.cpu_percent).rjust(6), mib(p.rss_mib).rjust(10),
                      plain(p.type), owners.get(p.pid, "—") if isinstance(p.pid, int) else "—", plain(p.name))
                     for p in processes)
        if rows == self._shown:
            return
        # a new list (a process's memory moved) keeps the operator's place: the cursor on the same
        # process and the list scrolled as it was, not both back at the top
        at, top = self.cursor_row, self.scroll_y
        held = self._shown[at][:2] if 0 <= at < len(self._shown) else None   # (pid, GPU) under the cursor
        self.clear()
        for row in rows:
            self.add_row(*row)
        self._shown = rows
        if rows and (at > 0 or top > 0):
            ids = [row[:2] for row in rows]
            self.move_cursor(row=ids.index(held) if held in ids else min(at, len(rows) - 1), scroll=False)
            self.scroll_to(y=top, animate=False, immediate=True)
