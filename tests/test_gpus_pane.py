"""The GPUs tab in a small host app, driven with Pilot."""
from __future__ import annotations

from dataclasses import replace

from console.gpus import parse_text
from console.hosts import LocalHost
from console.session import HostSession
from profiles import store
from profiles.profile import profile_from_dict
from screens.gpus_pane import GPUsPane
from tests.gpus_standin import FIXTURES, standin_command
from tests.harness import HostApp, wait_until
from widgets.gpu_fleet import FleetTable
from widgets.gpu_processes import GPUProcessTable
from widgets.gpu_table import GPUTable


def local_profile(name: str, smi_command: list[str], interval_ms: int = 200):
    return profile_from_dict(name, {"transport": "local",
                                    "gpu": {"sample_interval_ms": interval_ms, "smi_command": smi_command}})


def PaneApp(session: HostSession | None) -> HostApp:
    return HostApp(GPUsPane(), session, footer=False, title="PaneApp")


def session_for(profile) -> HostSession:
    return HostSession(profile=profile, host=LocalHost(profile.name))


def text_of(widget) -> str:
    return str(widget.render())


async def test_stale_rows_badges_warning_and_summary():
    app = PaneApp(session_for(local_profile("box", standin_command("ticks-stale-8x.csv", "apps-none.csv"))))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: "8 · 7 STALE" in app.summaries)
        pane = app.query_one(GPUsPane)
        table = pane.query_one(GPUTable)
        assert table.row_count == 8
        flags = [str(table.get_cell(str(g.key), "flags")) for g in pane.snapshot.gpus]
        assert all("STALE" in f for f in flags[:7]) and "STALE" not in flags[7]
        warning = pane.query_one("#gpus-warning")
        assert warning.display and "7 GPUs read 100%" in text_of(warning)
        assert "Processes  (none)" in text_of(pane.query_one("#gpus-proc-label"))
        assert "sample" in text_of(pane.query_one("#gpus-status"))


async def test_rows_update_in_place():
    app = PaneApp(session_for(local_profile("box", standin_command("ticks-busy-8x.csv", "apps-busy-8x.csv"))))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(GPUsPane)
        table = pane.query_one(GPUTable)
        seen = set()

        def enough():
            if pane.snapshot:
                seen.add(pane.snapshot.taken_at)
            return len(seen) >= 5 and table.cell_updates > 0
        await wait_until(pilot, enough)
        assert table.rebuilds == 1 and table.row_count == 8
        assert pane.query_one(GPUProcessTable).row_count == 8
        assert str(table.get_cell(str(pane.snapshot.gpus[0].key), "flags")).strip() != ""


async def test_error_state_is_shown_instead_of_rows():
    app = PaneApp(session_for(local_profile("box", ["/nonexistent/nvidia-smi"])))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(GPUsPane)
        await wait_until(pilot, lambda: pane.snapshot is not None)
        error = pane.query_one("#gpus-error")
        assert error.display and "no-driver" in text_of(error)
        assert not pane.query_one(GPUTable).display
        # the tab title reaches the app as a message
        await wait_until(pilot, lambda: app.summaries and app.summaries[-1] == "no-driver", what="the title no-driver")


async def test_no_signal_is_marked():
    snap = parse_text((FIXTURES / "table-8x-stale-after-crash.txt").read_text())
    app = PaneApp(None)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(GPUsPane)
        pane.session = session_for(local_profile("box", ["x"]))
        snap.taken_at = pane.clock() - 42
        snap.sample_stale, snap.stale_reason = True, "nvidia-smi exited with status 137; retrying in 1 s"
        pane.show_snapshot(snap)
        status = text_of(pane.query_one("#gpus-status"))
        assert "NO SIGNAL" in status and "42s ago" in status
        # the tab title reaches the app as a message
        await wait_until(pilot, lambda: app.summaries and app.summaries[-1] == "8 · 7 STALE · no signal",
                         what="the title marking no signal")


async def test_fleet_lists_every_profile_and_enter_opens_one():
    store.save(local_profile("alpha", standin_command("ticks-busy-8x.csv", "apps-busy-8x.csv"), 500))
    store.save(local_profile("beta", standin_command("ticks-stale-8x.csv", "apps-none.csv"), 500))
    app = PaneApp(session_for(local_profile("alpha", standin_command("ticks-busy-8x.csv"))))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(GPUsPane)
        await pilot.press("f")
        fleet = pane.query_one(FleetTable)
        # the pane on its own samples every profile itself: the rows come with the first samples
        await wait_until(pilot, lambda: pane.has_class("-fleet") and fleet.row_count >= 2, what="the fleet view's rows")

        def stale_shown():
            return fleet.row_count and "3" not in str(fleet.get_cell("beta", "stale")) and \
                str(fleet.get_cell("beta", "stale")).strip() not in ("0", "")
        await wait_until(pilot, stale_shown, 20, "the stale flags shown")
        assert str(fleet.get_cell("beta", "stale")).strip() == "7"
        assert str(fleet.get_cell("alpha", "gpus")) == "8"
        await pilot.press("down")
        await pilot.press("enter")
        await wait_until(pilot, lambda: app.opened, what="Enter asking to open a host")
        assert app.opened == ["beta"]
        await pilot.press("f")
        await wait_until(pilot, lambda: not pane.has_class("-fleet") and pane.fleet is None, what="f closing the fleet view")


def test_main_view_snapshot(snap_compare):
    snap_text = (FIXTURES / "table-8x-stale-after-crash.txt").read_text()

    async def run_before(pilot):
        pane = pilot.app.query_one(GPUsPane)
        pane.session = session_for(local_profile("rtx6000-box", ["x"]))
        base = 1_800_000_000.0
        pane.clock = lambda: base + 300.4
        for i in range(0, 300, 10):            # five minutes of history: idle, then the stuck counter
            snap = parse_text(snap_text)
            for g in snap.gpus[:7]:
                g.util_gpu_pct = 0 if i < 200 else 100
            snap.taken_at = base + i
            pane.show_snapshot(snap)
        final = parse_text(snap_text)
        final.taken_at = base + 300
        pane.show_snapshot(final)
        await pilot.pause()

    assert snap_compare(PaneApp(None), terminal_size=(160, 45), run_before=run_before)


async def test_the_fleet_view_calls_a_host_unreachable_when_its_chip_says_its_link_is_down():
    """A lost link re-shows the host's last sample marked stale; the fleet view's Reachable column
    reads the runtime's link (what the chip reads), not the sample's state alone."""
    from types import SimpleNamespace

    snap = parse_text((FIXTURES / "table-8x-stale-after-crash.txt").read_text())
    snap.sample_stale, snap.stale_reason = True, "connection lost; retrying in 2 s"
    app = PaneApp(None)
    app.fleet = SimpleNamespace(runtimes={"up": SimpleNamespace(snapshot=snap, reachable=True),
                                          "lost": SimpleNamespace(snapshot=snap, reachable=False)})
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(GPUsPane)
        pane.action_toggle_fleet()
        fleet = pane.query_one(FleetTable)
        await wait_until(pilot, lambda: fleet.row_count == 2, what="both hosts in the fleet view")
        assert "yes" in str(fleet.get_cell("up", "reach")) and "no" in str(fleet.get_cell("lost", "reach"))


async def test_a_flag_that_widens_its_column_is_drawn_whole_even_if_a_frame_came_first():
    """A frame drawn between a row's new flag and Textual's idle-time width pass must not leave the
    flag cut ("STAL") once the pass has run: the table caches drawn cells by update, not by width,
    so the Flags column has to be as wide as its widest cell before that cell is put in."""
    gpus = parse_text((FIXTURES / "table-8x-stale-after-crash.txt").read_text()).gpus[:2]
    idle = [replace(g, flags=["idle"]) for g in gpus]
    stale = [replace(idle[0], flags=["stale"]), idle[1]]
    table = GPUTable()
    app = HostApp(table, footer=False)
    async with app.run_test(size=(160, 10)) as pilot:
        await wait_until(pilot, lambda: table.size.width > 0, what="the table laid out")
        table.show(idle, {})
        await wait_until(pilot, lambda: table.row_count == 2 and "IDLE" in table.render_line(1).text,
                         what="the idle rows drawn")
        table.show(stale, {})
        table.render_line(1)  # a frame before the idle pass
        # once the idle pass has run the flag is whole; with the width fixed late it stayed cut for good
        await wait_until(pilot, lambda: " STALE " in table.render_line(1).text, what="the whole STALE flag")
