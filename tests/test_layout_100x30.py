"""Every tab readable in a 100x30 tmux split: checks that the columns an operator acts on (GPU flags
and P-state, the bench note, the roofline table) are whole. The pictures of every tab of the whole
app at 100x30 are in tests/test_snapshots_tabs.py; the Tasks board's own one stays here."""
from __future__ import annotations

from console.gpus import parse_text
from tests.gpus_standin import FIXTURES
from tests.harness import wait_until
from tests.test_bench_pane import DIED, BenchApp, saved_run
from tests.test_gpus_pane import PaneApp as GPUsApp
from tests.test_gpus_pane import local_profile, session_for
from tests.test_roofline_pane import SWEEP
from tests.test_roofline_pane import PaneApp as RooflineApp
from tests.test_roofline_pane import _session as roofline_session
from widgets.bench_table import BenchLevelTable
from widgets.gpu_table import GPUTable, fit_for

SIZE = (100, 30)


async def _stale_gpus(pilot):
    from screens.gpus_pane import GPUsPane

    pane = pilot.app.query_one(GPUsPane)
    pane.session = session_for(local_profile("rtx6000-box", ["x"]))
    base = 1_800_000_000.0
    pane.clock = lambda: base + 300.4
    final = parse_text((FIXTURES / "table-8x-stale-after-crash.txt").read_text())
    final.taken_at = base + 300
    pane.show_snapshot(final)
    table = pane.query_one(GPUTable)
    # the columns are fitted to the pane's width when it is laid out (on resize), after this draw
    await wait_until(pilot, lambda: table.size.width > 0 and table.fit == fit_for(table.parent.size.width)
                     and table.row_count == len(final.gpus), what="the GPU table fitted to 100 columns")


async def test_gpu_flags_and_pstate_are_whole_at_100_columns():
    app = GPUsApp(None)
    async with app.run_test(size=SIZE) as pilot:
        await _stale_gpus(pilot)
        table = app.query_one(GPUTable)
        keys = [str(k.value) for k in table.columns]
        assert "flags" in keys and "p" in keys
        assert "spark" not in keys  # the first column to give way
        total = sum(c.get_render_width(table) for c in table.columns.values())
        assert total <= table.size.width, "the table is wider than its pane: something is cut"
        flags = table.get_row_at(0)[keys.index("flags")]
        assert "STALE" in str(flags)


def test_shrink_order_is_the_stated_one():
    full = [k for k, _, _ in fit_for(160).columns]
    assert full == ["gpu", "name", "util", "mem", "temp", "power", "sm", "p", "spark", "flags"]
    assert [k for k, _, _ in fit_for(125).columns] == ["gpu", "name", "util", "mem", "temp", "power", "sm", "p", "flags"]
    narrow = fit_for(96)
    assert [k for k, _, _ in narrow.columns] == ["gpu", "name", "util", "mem", "temp", "power", "p", "flags"]
    assert narrow.short_names
    assert fit_for(220).name_width > fit_for(160).name_width  # names whole on a wide screen


async def test_bench_note_is_not_cut_at_100_columns():
    saved_run(DIED, "sweep-20261129-140000")
    app = BenchApp(url=None)
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(BenchLevelTable)
        # the saved run is read off the UI thread; the columns are fitted once the table is laid out
        await wait_until(pilot, lambda: table.narrow and table.row_count == 3, what="the saved run in the narrow table")
        keys = [str(k.value) for k in table.columns]
        assert keys[-1] == "note" and "progress" not in keys
        total = sum(c.get_render_width(table) for c in table.columns.values())
        assert total <= table.size.width
        note = str(table.get_row_at(1)[-1])
        assert note.startswith("server died")


async def test_roofline_table_header_is_whole_at_100_columns(shared_dir, gpudeck_home):
    from widgets.roofline_plot import RooflinePlot
    from widgets.roofline_table import RooflineTable

    app = RooflineApp(roofline_session(shared_dir, [SWEEP]))
    async with app.run_test(size=SIZE) as pilot:
        table = app.query_one(RooflineTable)
        # the roofline is worked out off the UI thread; the narrow class follows the pane's resize
        await wait_until(pilot, lambda: app.summaries and table.row_count > 0
                         and app.query_one("RooflinePane").has_class("narrow"), what="the roofline drawn, narrow")
        assert not app.query_one(RooflinePlot).display  # the chart gives way, the numbers stay
        assert table.size.width >= sum(c.get_render_width(table) for c in table.columns.values())


def test_tasks_at_100x30(snap_compare):
    from console.store.tasks import tasks_file
    from tests.tasks_pane_app import TasksApp
    from tests.test_tasks_pane_snapshot import BOARD

    path = tasks_file("local")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(BOARD)
    assert snap_compare(TasksApp(), terminal_size=SIZE)


async def test_flags_grow_when_a_later_sample_flags_more():
    """A host that turns STALE after starting IDLE shows the whole badge, at 100 and 160 columns."""
    from console.gpus.model import GPU

    for size in (SIZE, (160, 45)):
        app = GPUsApp(None)
        async with app.run_test(size=size) as pilot:
            table = app.query_one(GPUTable)
            await wait_until(pilot, lambda: table.size.width > 0 and table.fit == fit_for(table.parent.size.width),
                             what="the GPU table fitted to its width")
            idle = [GPU(index=i, name="NVIDIA RTX PRO 6000 Blackwell Server Edition", flags=["idle"]) for i in range(2)]
            table.show(idle, {})
            await wait_until(pilot, lambda: table.row_count == 2, what="the idle rows")
            stale = [GPU(index=i, name="NVIDIA RTX PRO 6000 Blackwell Server Edition", flags=["stale"])
                     for i in range(2)]
            table.show(stale, {})
            await wait_until(pilot, lambda: "STALE" in str(table.get_row_at(0)[-1]), what="the stale rows")
            flags = table.columns[next(k for k in table.columns if k.value == "flags")]
            assert flags.get_render_width(table) >= len(" STALE ") + 2


def test_gpu_names_take_spare_room_before_being_cut():
    """At 160 columns the table has room: 'NVIDIA RTX PRO 6000 Blackwell' is whole, not 'Black…'."""
    from widgets.gpu_table import _name
    from console.gpus.model import GPU

    gpu = GPU(index=0, name="NVIDIA RTX PRO 6000 Blackwell")
    assert _name(gpu, fit_for(160)) == "NVIDIA RTX PRO 6000 Blackwell"
    assert _name(gpu, fit_for(96)).endswith("…") or len(_name(gpu, fit_for(96))) <= fit_for(96).name_width
