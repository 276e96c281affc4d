"""A key's effect is drawn when the key is handled, not by whatever refresh comes next, and no
later refresh takes it away.

Each test holds back the refresh that used to draw the effect (a sweep that reports nothing, no
state event, a once-a-second redraw left out) and looks right after the key, or sends the refresh
that used to undo it: on the old code each of these showed nothing new until that refresh came,
never showed it, or lost it.
"""
from __future__ import annotations

from console.runtime import events as ev
from screens.bench_pane import BenchPane
from tests.harness import wait_until
from tests.test_bench_pane import OK, BenchApp, press_start, replaying, run_to_end


async def test_bench_stop_says_stopping_before_the_sweep_reports_again():
    """s, y: the status line says the sweep is stopping at once. The sweep here is held (it
    reports nothing more), so the line cannot come from its next report."""
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(OK, "--hold-after", "5")   # run-start, level-start, three ticks, then silence
        await press_start(pilot)
        status = lambda: str(pane.query_one("#bp-status").render())  # noqa: E731
        await wait_until(pilot, lambda: pane.proc is not None and pane.has_class("running")
                         and len(pane.view.series) == 3 and "client lag" in status(), what="the held sweep drawn")
        reports: list[ev.SweepProgress] = []
        seen = pane.runtime_event
        pane.runtime_event = lambda event: (reports.append(event) if isinstance(event, ev.SweepProgress) else None,
                                            seen(event))
        stop = pane.runtime.stop_sweep
        asked: list[bool] = []
        pane.runtime.stop_sweep = lambda: asked.append(True) or True   # asked, but the generator is not told yet
        await pilot.press("s")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "Confirm" and app.screen.focused is not None,
                         what="the stop confirmation")
        await pilot.press("y")
        assert asked == [True]
        assert "stopping: the current level is finishing its records" in status()
        assert reports == []                               # drawn by the key, not by a report
        pane.runtime.stop_sweep = stop
        assert stop()                                      # now the generator is told, and ends
        await run_to_end(pilot, pane)


async def _campaign_key(monkeypatch, saved_status: str, key: str, engine_call: str, make_live) -> str:
    """Press `key` on the Campaign tab over a saved campaign in `saved_status`; the engine call it
    makes (`engine_call`) is stood in for by `make_live(runtime, state)`, which saves the campaign
    its driver would be running and returns (what the engine returns, the driver's pid). The
    runtime's own reading of the store follows, and a driver is taken as alive when its pid is 4242
    (its proof is pid, start time and token; no real driver runs here). Returns the title drawn
    right after the key's work is done."""
    from console.campaign import owner
    from screens.campaign_pane import CampaignPane
    from console.session import HostSession
    from profiles import store
    from tests.harness import HostApp
    from tests.test_campaign_tab import _saved

    monkeypatch.setattr(owner, "driver_alive", lambda state: state.driver_pid == 4242)
    state = _saved(saved_status)
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.pane
        await wait_until(pilot, lambda: pane.state is not None and pane.state.id == state.id, 5, "the saved campaign")
        runtime = pane.runtime
        calls: list[str] = []

        async def stand_in(*_args):
            calls.append(engine_call)
            result = make_live(state)
            await runtime._campaign_update()       # what the runtime does after starting a driver
            return result
        monkeypatch.setattr(runtime, engine_call, stand_in)
        pane.focus()
        await pilot.press(key)
        await wait_until(pilot, lambda: calls and not [w for w in pane.workers if w.group == "campaign-action"
                                                       and w.is_running], 5, f"{key} done")
        return str(pane.query_one("#camp-title").render())


async def test_campaign_resume_says_so_while_its_new_driver_starts(monkeypatch):
    """R on a stopped campaign: "resumed …" stays on the title. The campaign reads "stopped" until
    its new driver writes; the line was judged against that and went at once, never seen."""
    from console.store import campaigns as st

    def resumed(state):
        state.driver_pid = 4242                    # spawned; the state still says "stopped"
        st.save(state)
        return 4242
    title = await _campaign_key(monkeypatch, "stopped", "R", "resume_campaign", resumed)
    assert "resumed campaign-" in title and "driver pid 4242" in title and "● driver running" in title


async def test_campaign_run_after_a_finished_one_says_started(monkeypatch):
    """r with a finished campaign on screen: "started …" stays on the title. It was judged against
    the finished campaign still shown (the new one's event was queued) and went at once."""
    from console.store import campaigns as st

    def started(old):
        new = st.CampaignState(id=st.new_id("box"), profile="box", spec=old.spec, cells=[
            st.Cell(name=c.name, base=c.base) for c in old.cells], driver_pid=4242)
        new.created_at = old.created_at + 60
        st.save(new)
        return new.id, 4242
    title = await _campaign_key(monkeypatch, "finished", "r", "start_campaign", started)
    assert "started campaign-" in title and "it keeps running if the console closes" in title
    assert "● driver running" in title


async def test_server_diff_stays_through_the_selected_servers_state_changes(tmp_path):
    """d: the diff stays on screen while the selected config's server moves on (launching,
    loading, ready); each state change used to put the flags back in its place."""
    import time

    from console.session import HostSession
    from console.store.launches import LaunchRecord
    from profiles import store
    from profiles.profile import profile_from_dict
    from screens.pane import Pane
    from screens.server_pane import FLAG_COLUMNS, ServerPane
    from tests.harness import HostApp

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name, ctx in (("a", 2048), ("b", 4096)):
        (scripts / f"{name}.sh").write_text(f"#!/bin/sh\nexec llama-server -m /models/{name}.gguf --port 8001 -c {ctx}\n")
    store.save(profile_from_dict("local", {"transport": "local", "server": {
        "scripts_dir": str(scripts), "log_dir": str(tmp_path / "logs")}}))
    app = HostApp(ServerPane(id="pane-server"), HostSession.open(store.load("local")))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.pane
        await wait_until(pilot, lambda: [c.name for c in pane.configs] == ["a", "b"] and pane.selected == "a",
                         what="the two configs")
        flags = pane.query_one("#flags")
        headers = lambda: tuple(str(c.label) for c in flags.columns.values())  # noqa: E731
        pane.query_one("#configs").focus()
        await pilot.press("d")
        assert pane.diffing and headers() == ("flag", "a", "b")
        record = LaunchRecord(id="a-1", config="a", script=str(scripts / "a.sh"), log=None, exit_file=None,
                              started_at=time.time())
        for state in ("launching", "loading", "ready"):
            record.state = state
            pane.post_message(Pane.Runtime(ev.ServerStateChanged("local", record)))
            await wait_until(pilot, lambda: pane.latest.get("a") is record and pane.shown_record == "a-1"
                             and record.state in str(pane.query_one("#configs").get_row("a")[1]),
                             what=f"the {state} state drawn")
            assert pane.diffing and headers() == ("flag", "a", "b"), state
            assert "diff: a  vs  b" in str(pane.query_one("#promise").render())
        await pilot.press("escape")
        assert not pane.diffing and headers() == FLAG_COLUMNS


async def _switch_to_box_holding_the_roofline(app, pilot, entered, release) -> None:
    """H, then Enter on host `box`, with the Roofline tab held in its read of the new host: `entered`
    is set once it is, and it goes on when `release` is set (the switch then holds the app's queue
    on the old code, so nothing here waits on the pilot after Enter)."""
    from textual.widgets import OptionList

    from screens.host_switcher import HostSwitcher

    roofline = app.panes["roofline"]
    reads = roofline.set_session

    async def slow_read(target):
        entered.set()
        await release.wait()      # a tab still reading the new host
        await reads(target)
    roofline.set_session = slow_read
    await pilot.press("H")
    await wait_until(pilot, lambda: isinstance(app.screen, HostSwitcher) and app.screen.query(OptionList),
                     what="the host switcher")
    hosts = app.screen.query_one(OptionList)
    hosts.highlighted = next(i for i in range(hosts.option_count) if hosts.get_option_at_index(i).id == "box")
    hosts.action_select()


async def test_the_header_names_the_chosen_host_before_every_tab_has_read_it():
    """H, Enter on another host: the chip bar makes it the current host at once. It used to wait
    until all six tabs had read the new host (the Roofline tab's ceiling takes a fifth of a second
    on the demo host), or for the chip bar's once-a-second redraw, which this app leaves out."""
    import asyncio

    from profiles import store
    from profiles.profile import profile_from_dict
    from screens.app import GpudeckApp
    from widgets.host_chips import HostChips

    store.save(profile_from_dict("box", {"transport": "local"}))
    app = GpudeckApp(profile_name="local")
    every = app.set_interval

    def no_chip_timer(interval, callback=None, **kwargs):
        if callback == app._refresh_chips:
            return None               # the chips are drawn by what happens, never by the clock
        return every(interval, callback, **kwargs)
    app.set_interval = no_chip_timer
    entered, release = asyncio.Event(), asyncio.Event()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: app.started.is_set(), what="the console started")
        chips = app.query_one(HostChips)
        assert chips.line_text().plain.startswith(" gpudeck  local")
        await _switch_to_box_holding_the_roofline(app, pilot, entered, release)
        try:
            await asyncio.wait_for(entered.wait(), 10)
            assert chips.line_text().plain.startswith(" gpudeck  box"), chips.line_text().plain
            assert app.sub_title == "box"
        finally:
            release.set()             # or the app, still switching, could never close
        await wait_until(pilot, lambda: all(p.session is not None and p.session.name == "box"
                                            for p in app.panes.values()), what="every tab on box")


async def test_fleet_title_names_the_rows_on_screen_as_the_filter_line_opens_and_closes():
    """/ opens the filter line above the hosts and Enter closes it: the table shrinks and grows
    by the line's height, and the title's "rows 1-N" follows at once. It used to name the rows of
    before until the view's once-a-second redraw, which this app leaves out (and no refresh comes:
    the Prometheus here answers nothing)."""
    import time

    from console.gpus.model import GPU, Snapshot
    from console.gpus.prometheus import FleetSample, PrometheusFleet, PromSettings
    from screens.fleet_app import FleetApp, FleetSampled
    from widgets.fleet_hosts import FleetHostsTable

    app = FleetApp(PrometheusFleet(PromSettings(url="http://127.0.0.1:9"), simulated=True), "f", interval_s=60)
    every = app.set_interval

    def no_redraw_timer(interval, callback=None, **kwargs):
        return None if callback == app.redraw else every(interval, callback, **kwargs)
    app.set_interval = no_redraw_timer
    async with app.run_test(size=(160, 40)) as pilot:
        await wait_until(pilot, lambda: app.latest is not None, what="the first answer from the dead URL")
        now = time.time()
        app.post_message(FleetSampled(FleetSample(taken_at=now, hosts=[
            Snapshot(gpus=[GPU(index=0, name="NVIDIA B200")], host=f"node-{i:04d}", taken_at=now, source="dcgm")
            for i in range(200)])))
        table = app.query_one(FleetHostsTable)
        title = lambda: str(app.query_one("#fleet-title").render())  # noqa: E731
        await wait_until(pilot, lambda: len(table.hosts) == 200 and f"rows 1-{table.window};" in title(),
                         what="the hosts and their rows in the title")
        full = table.window
        await pilot.press("slash")
        await wait_until(pilot, lambda: table.window < full, what="the filter line taking room from the table")
        await wait_until(pilot, lambda: f"rows 1-{table.window};" in title(), 5, "the title to follow the table")
        await pilot.press("enter")
        await wait_until(pilot, lambda: table.window == full, what="the table back to its height")
        await wait_until(pilot, lambda: f"rows 1-{full};" in title(), 5, "the title to follow the table back")


async def test_scrolling_the_server_log_back_says_it_no_longer_follows(tmp_path):
    """PgUp (or Home, up, the wheel) in a followed log: the view stays where the operator put it
    as lines come, and the log head turns to "follow ○" at once. It used to keep saying
    "follow ●" for good, and f then turned following off rather than back on."""
    from console.session import HostSession
    from profiles import store
    from screens.server_pane import ServerPane
    from tests.harness import HostApp
    from tests.test_server_log_keys import _old_launch
    from widgets.log_view import LogView

    _old_launch(tmp_path)
    app = HostApp(ServerPane(id="pane-server"), HostSession.open(store.load("local")))
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.pane
        view = pane.query_one(LogView)
        head = lambda: str(pane.query_one("#loghead").render())  # noqa: E731
        await wait_until(pilot, lambda: len(view.lines) == 100 and view.is_vertical_scroll_end and "follow ●" in head(),
                         what="the old launch's log, followed")
        view.focus()
        for key, also in (("pageup", "home"), ("home", "up")):
            await pilot.press(key)
            assert not view.follow and "follow ○" in head(), key
            at = view.scroll_y
            view.add_lines(["one more line"])
            await pilot.press(also)                   # the view stays where it was put, and so does the head
            assert view.scroll_y <= at and not view.follow and "follow ○" in head(), also
            await pilot.press("f")                     # one f: following again, at the end
            await wait_until(pilot, lambda: view.follow and view.is_vertical_scroll_end and "follow ●" in head(),
                             what=f"f following again after {key}")


async def test_the_footer_offers_esc_as_soon_as_the_keys_panel_opens():
    """?: the footer offers "Esc close keys" at once, and drops it when ? closes the panel. It used
    to wait for something else to make the footer look again (a focus move, a tab redrawing its
    keys): on the GPUs tab nothing does, and the footer never offered it."""
    from screens.app import GpudeckApp
    from widgets.keys_panel import KeysPanel

    def offered() -> list[str]:
        from widgets.steady_footer import SteadyFooter

        return [str(key.description) for key in app.screen.query_one(SteadyFooter).shown_keys()]

    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: app.started.is_set() and "keys" in offered(), what="the console and its footer")
        assert "close keys" not in offered()
        for _ in range(2):   # twice: the first time, a look the start left queued could still come by
            await pilot.press("question_mark")
            await wait_until(pilot, lambda: app.screen.query_children(KeysPanel), what="the keys panel")
            await wait_until(pilot, lambda: "close keys" in offered(), 5, "the footer to offer Esc")
            await pilot.press("question_mark")
            await wait_until(pilot, lambda: not app.screen.query_children(KeysPanel), what="the panel closed")
            await wait_until(pilot, lambda: "close keys" not in offered(), 5, "the footer to drop Esc")


async def test_a_key_pressed_during_a_host_switch_is_not_held_until_it_ends():
    """H, Enter, then 3: the Bench tab opens while the tabs are still reading the new host. The
    switch ran inside the app's own message handling, so every key queued behind it until all six
    tabs had read the host (a fifth of a second on the demo host; here, held until released)."""
    import asyncio

    from profiles import store
    from profiles.profile import profile_from_dict
    from screens.app import GpudeckApp

    store.save(profile_from_dict("box", {"transport": "local"}))
    app = GpudeckApp(profile_name="local")
    entered, release = asyncio.Event(), asyncio.Event()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: app.started.is_set(), what="the console started")
        await _switch_to_box_holding_the_roofline(app, pilot, entered, release)
        try:
            await asyncio.wait_for(entered.wait(), 10)
            await pilot.press("3")
            await wait_until(pilot, lambda: app.tabs.active == "bench", 5, "3 opening the Bench tab mid-switch")
            assert not release.is_set() and app.panes["tasks"].session.name == "local"   # the switch is still going
        finally:
            release.set()             # or the app, still switching, could never close
        await wait_until(pilot, lambda: all(p.session is not None and p.session.name == "box"
                                            for p in app.panes.values()), what="every tab on box")


async def test_the_gpu_process_list_keeps_the_operators_place_when_it_changes():
    """Tab to the process list, move down it: a new sample in which a process's memory moved keeps
    the cursor on the same process and the list scrolled as it was. Each such sample used to put
    the cursor and the list back at the top (the list is rebuilt when it changes)."""
    from textual.app import App, ComposeResult

    from console.gpus.model import GPUProcess
    from widgets.gpu_processes import GPUProcessTable

    class Processes(App):
        def compose(self) -> ComposeResult:
            yield GPUProcessTable()

    def listed(grown: int | None = None) -> list[GPUProcess]:
        return [GPUProcess(pid=1000 + i, gpu_index=i % 8, used_memory_mib=2048.0 + (512 if i == grown else 0),
                           name=f"python worker {i}", type="C") for i in range(30)]

    app = Processes()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(GPUProcessTable)
        table.show(listed())
        table.focus()
        await pilot.press(*["down"] * 20)
        assert table.cursor_row == 20 and table.scroll_y > 0
        top = table.scroll_y
        table.show(listed(grown=3))                   # one process's memory moved: a new list
        await pilot.pause()
        assert table.cursor_row == 20 and str(table.get_row_at(20)[0]).strip() == "1020"
        assert table.scroll_y == top
        table.show(listed(grown=3)[1:])               # the first process went: the cursor stays on its process
        await pilot.pause()
        assert str(table.get_row_at(table.cursor_row)[0]).strip() == "1020"


async def test_the_roofline_table_keeps_its_cursor_on_the_batch_when_it_is_redrawn():
    """Down the Roofline table to a batch: a redraw (a sweep saving a level, a what-if keystroke)
    keeps the cursor on that batch. Each used to put it back on the first row."""
    from textual.app import App, ComposeResult

    from console.roofline.compare import Row
    from widgets.roofline_table import RooflineTable

    class Table(App):
        def compose(self) -> ComposeResult:
            yield RooflineTable()

    def rows(measured_at: int | None = None, batches=(1, 2, 4, 8, 16, 32, 64)) -> list[Row]:
        return [Row(batch=b, ideal_tok_s=100.0 * b, realistic_tok_s=80.0 * b,
                    measured_tok_s=50.0 * b if b == measured_at else None, measured_status=None,
                    efficiency_pct=62.5 if b == measured_at else None, bound="memory") for b in batches]

    app = Table()
    async with app.run_test(size=(120, 30)) as pilot:
        table = app.query_one(RooflineTable)
        table.show(rows())
        table.focus()
        await pilot.press("down", "down", "down")
        assert str(table.get_row_at(table.cursor_row)[0]) == "8"
        table.show(rows(measured_at=8))                 # a level saved: the table redrawn
        await pilot.pause()
        assert str(table.get_row_at(table.cursor_row)[0]) == "8"
        table.show(rows(batches=(4, 8, 16)))            # a what-if with other batches: still on 8
        await pilot.pause()
        assert str(table.get_row_at(table.cursor_row)[0]) == "8"
