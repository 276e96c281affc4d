"""The fleet view in a 100-column terminal: low-value columns give way, State and Notes stay,
the drill-in shows a note whole and its power reads right; `?` and ctrl+p know the fleet's keys."""
from __future__ import annotations

from textual.app import App, ComposeResult

from console.gpus.fleet_table import HostRow
from console.gpus.prometheus import PrometheusFleet, PromSettings
from tests.harness import wait_until
from widgets.fleet_hosts import PAD, columns_for, FleetHostsTable
from widgets.gpu_table import power_text

NOTE = "XID 79 on GPU 3: GPU has fallen off the bus: reset or replace it"


def _row(name: str, **kw) -> HostRow:
    base = dict(host=name, state="ok", gpus=8, util_pct=10.0, memory_used_mib=1000.0, memory_total_mib=80000.0,
                temp_max_c=50.0, power_w=300.0, stale=0, busy=1)
    base.update(kw)
    return HostRow(**base)


def test_columns_give_way_in_order_and_keep_state_and_notes():
    for width in (100, 120, 160, 220):
        cols = columns_for(width)
        keys = [k for k, _, _ in cols]
        assert {"host", "state", "notes"} <= set(keys)
        assert sum(w + PAD for _, _, w in cols) <= width
    assert "power" not in [k for k, _, _ in columns_for(100)]
    assert [k for k, _, _ in columns_for(220)][:-1] == ["host", "state", "gpus", "util", "mem", "temp", "power", "age"]


class TableApp(App):
    def compose(self) -> ComposeResult:
        yield FleetHostsTable()


async def test_notes_are_on_screen_at_100_columns():
    app = TableApp()
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(FleetHostsTable)
        table.show([_row("sim-node-09", state="xid", worst="xid", xids=[(3, 79)], stale=8), _row("sim-node-01")])
        # the columns are chosen for the table's width when it is laid out (on resize)
        await wait_until(pilot, lambda: table.size.width > 0 and table.shown_columns == columns_for(table.size.width)
                         and table.row_count == 2, what="the table fitted to 100 columns")
        notes = next(c for c in table.ordered_columns if c.key.value == "notes")
        left = sum(c.get_render_width(table) for c in table.ordered_columns[:-1])
        assert left + 20 <= 100 and notes.get_render_width(table) >= 30
        assert "8 STALE" in str(table.get_cell("sim-node-09", "notes"))


def test_power_without_a_limit_reads_as_watts():
    assert power_text(34.0, None) == "34 W"
    assert power_text(34.0, 700.0) == "34/700W"
    assert power_text(None, None) == "N/A"


async def test_question_mark_lists_the_fleet_keys_and_esc_closes_it():
    from screens.fleet_app import FleetApp
    from widgets.keys_panel import KeysPanel

    app = FleetApp(PrometheusFleet(PromSettings(url="http://127.0.0.1:9"), simulated=True), "f", interval_s=5)
    async with app.run_test(size=(100, 30)) as pilot:
        await pilot.press("question_mark")
        await wait_until(pilot, lambda: app.screen.query(KeysPanel), what="the keys panel")
        panel = app.screen.query_one(KeysPanel)
        assert panel.groups[0][0] == "Fleet" and ("x", "XID only") in panel.groups[0][1]
        await pilot.press("escape")
        await wait_until(pilot, lambda: not app.screen.query(KeysPanel), what="Esc closing the keys panel")
        assert app.is_running


async def test_drill_in_shows_the_whole_note_and_power_without_limit():
    """Enter on a host: its note whole (the table cut it at the edge), and a GPU whose power
    limit DCGM does not give reads '34 W' in the Power column."""
    import time

    from console.gpus.model import GPU, Snapshot
    from console.gpus.prometheus import FleetSample
    from screens.fleet_app import FleetApp, HostGPUs
    from widgets.gpu_table import GPUTable

    app = FleetApp(PrometheusFleet(PromSettings(url="http://127.0.0.1:9"), simulated=True), "f", interval_s=60)
    async with app.run_test(size=(100, 30)) as pilot:
        # the first (failed) answer from the dead URL, before our sample goes in
        await wait_until(pilot, lambda: app.latest is not None, what="the first answer from the dead URL")
        gpus = [GPU(index=i, name="NVIDIA B200", power_draw_w=34.0, xid=79 if i == 3 else 0,
                    flags=["xid-79"] if i == 3 else []) for i in range(8)]
        app.latest = FleetSample(taken_at=time.time(), hosts=[Snapshot(gpus=gpus, host="sim-node-09",
                                                                        taken_at=time.time(), source="dcgm")])
        app.push_screen(HostGPUs("sim-node-09"))
        # the history is asked of the (dead) Prometheus in a worker; its failure is added to the note
        await wait_until(pilot, lambda: isinstance(app.screen, HostGPUs) and app.screen.history_problem
                         and "no history" in str(app.screen.query_one("#host-note").render()),
                         what="the note with the history problem")
        note = str(app.screen.query_one("#host-note").render())
        assert "XID 79 on GPU 3" in note and "no history" in note  # the note whole, the history problem too
        power = str(app.screen.query_one(GPUTable).get_cell_at((0, [c.key.value for c in
                    app.screen.query_one(GPUTable).ordered_columns].index("power"))))
        assert power.strip() == "34 W"
