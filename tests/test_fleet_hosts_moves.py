"""Every key that moves the fleet table's window tells it at once (`FleetHostsTable.Moved`).

The fleet view's title says which rows are on screen ("rows 39-76") and is redrawn on that
message. Paging used to move the window before the table looked at where it had been, so a page
told nothing and the title named the old rows until the next refresh (up to a second later).
"""
from __future__ import annotations

from textual.app import App, ComposeResult

from console.gpus.fleet_table import HostRow
from tests.harness import wait_until
from widgets.fleet_hosts import FleetHostsTable

HOSTS = 200


def _row(i: int) -> HostRow:
    return HostRow(host=f"node-{i:04d}", state="ok", gpus=8, util_pct=50.0, memory_used_mib=1000.0,
                   memory_total_mib=80000.0, temp_max_c=40.0, power_w=300.0, stale=0, busy=8, worst="busy")


class OneTable(App):
    def __init__(self) -> None:
        super().__init__()
        self.told: list[tuple[int, int, int]] = []    # the table's span as each move was told

    def compose(self) -> ComposeResult:
        yield FleetHostsTable()

    def on_mount(self) -> None:
        table = self.query_one(FleetHostsTable)
        table.show([_row(i) for i in range(HOSTS)])
        table.focus()

    def on_fleet_hosts_table_moved(self, _message) -> None:
        self.told.append(self.query_one(FleetHostsTable).span)


async def test_each_window_move_is_told_with_the_rows_now_on_screen():
    app = OneTable()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(FleetHostsTable)
        window = table.window
        assert table.span == (1, window, HOSTS)
        for key, first in (("pagedown", window + 1), ("space", 2 * window + 1), ("pageup", window + 1),
                           ("ctrl+b", 1), ("end", HOSTS - window + 1), ("home", 1)):
            before = len(app.told)
            await pilot.press(key)
            await wait_until(pilot, lambda: len(app.told) > before, seconds=5, what=f"{key} to tell its move")
            assert app.told[-1] == table.span == (first, first + window - 1, HOSTS), key


async def test_a_key_that_keeps_the_window_tells_nothing():
    app = OneTable()
    async with app.run_test(size=(120, 20)) as pilot:
        table = app.query_one(FleetHostsTable)
        await pilot.press("down", "down", "up")
        assert table.cursor_row == 1 and table.top == 0
        assert app.told == []
