"""The board as a table: one row per task, keyed by id, the cursor kept on its task across redraws."""
from __future__ import annotations


from profiles.task_model import Task

from .task_rows import task_cells
from .safe_table import SafeDataTable


class TaskTable(SafeDataTable):
    """Draws the tasks it is given, in the order given; owns no I/O."""

    DEFAULT_CSS = """
    TaskTable { height: 1fr; }
    """

    def __init__(self, **kwargs) -> None:
        super().__init__(cursor_type="row", zebra_stripes=False, show_header=False, **kwargs)
        self.task_ids: list[int] = []

    def on_mount(self) -> None:
        self.add_column(" ", key="mark", width=1)
        self.add_column("priority", key="priority", width=6)
        self.add_column("task", key="text")
        self.add_column("links", key="links")

    def show(self, tasks: list[Task], keep: int | None = None) -> None:
        """Redraw; the cursor stays on task `keep` (else on the same row number)."""
        row_before = self.cursor_row
        self.clear()
        self.task_ids = [t.id for t in tasks]
        for task in tasks:
            self.add_row(*task_cells(task), key=str(task.id))
        if not tasks:
            return
        if keep in self.task_ids:
            self.move_cursor(row=self.task_ids.index(keep), animate=False)
        else:
            self.move_cursor(row=min(max(row_before, 0), len(tasks) - 1), animate=False)

    @property
    def selected_id(self) -> int | None:
        if not self.task_ids or not 0 <= self.cursor_row < len(self.task_ids):
            return None
        return self.task_ids[self.cursor_row]
