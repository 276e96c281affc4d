"""A table's cells are drawn again only when what they show changed (widgets/drawn_cells.py), and
they look exactly as the stock DataTable draws them."""
from __future__ import annotations

import asyncio

from rich.text import Text
from textual.app import App, ComposeResult
from textual.geometry import Region
from textual.widgets import DataTable, Static

from widgets.drawn_cells import DrawnCellTable
from tests.test_deck_tabs import cells


class Tables(App):
    CSS = "DataTable { height: 8; width: 60; }"

    def __init__(self, table_type: type[DataTable]) -> None:
        super().__init__()
        self.table = table_type(cursor_type="row", zebra_stripes=True)
        self.rich_draws = 0

    def compose(self) -> ComposeResult:
        yield self.table
        yield Static("below", id="other")

    def on_mount(self) -> None:
        console = self.console
        render_lines = console.render_lines
        depth = [0]

        def counted(*args, **kwargs):  # a cell's padding draws its text through a nested call
            self.rich_draws += depth[0] == 0
            depth[0] += 1
            try:
                return render_lines(*args, **kwargs)
            finally:
                depth[0] -= 1

        console.render_lines = counted
        table = self.table
        table.add_column("gpu", key="gpu")
        table.add_column("util", key="util", width=8)
        table.add_column("note", key="note")
        for n in range(5):
            table.add_row(Text(f"GPU{n}", style="bold"), Text(f"{10 * n}%", justify="right"),
                          Text.assemble(("ok ", "green"), ("xid 79", "red")) if n == 2 else Text("-"),
                          key=str(n))
        self.table.focus()


async def _frame(app: App) -> None:
    drawn = asyncio.Event()
    app.screen.call_after_refresh(drawn.set)
    await drawn.wait()


async def _looks(table_type: type[DataTable]) -> tuple[list, list[int]]:
    """The table's lines after each step, and how many cells Rich drew for each step."""
    app = Tables(table_type)
    looks, draws = [], []
    async with app.run_test(size=(80, 20)) as pilot:
        table = app.table

        async def step() -> None:
            await _frame(app)
            await pilot.pause()
            looks.append(cells(table.render_lines(Region(0, 0, *table.size))))
            draws.append(app.rich_draws)
            app.rich_draws = 0

        await step()                                              # 0: first draw
        table.update_cell("3", "util", Text("99%", justify="right"))
        await step()                                              # 1: one cell changed
        table.update_cell("3", "util", Text("99%", justify="right", style="red"))
        await step()                                              # 2: same text, new style
        table.move_cursor(row=3)
        await step()                                              # 3: the cursor moved
        app.set_focus(None)
        await step()                                              # 4: the table lost the focus
        table.update_cell("2", "note", Text("ok"))
        await step()                                              # 5: a span dropped
    return looks, draws


async def test_cells_look_as_the_stock_table_draws_them():
    mine, _ = await _looks(DrawnCellTable)
    stock, _ = await _looks(DataTable)
    assert len(mine) == len(stock) == 6
    for n, (a, b) in enumerate(zip(mine, stock)):
        assert a == b, f"step {n} differs from the stock DataTable"
    assert mine[1] != mine[0] and mine[2] != mine[1] and mine[5] != mine[4]   # each change shows


async def test_only_cells_whose_look_changed_are_drawn_again():
    _, mine = await _looks(DrawnCellTable)
    _, stock = await _looks(DataTable)
    every_cell = 6 * 3  # the header and five rows, three columns
    assert mine[0] == stock[0] == every_cell
    assert mine[1] == mine[2] == mine[5] == 1     # the one changed cell
    assert stock[1] == stock[2] == stock[5] == every_cell
    assert mine[3] == 2 * 3                       # the row the cursor left and the one it reached
    # losing the focus changes every cell's tint: both draw them all again
    assert mine[4] == stock[4] == every_cell
