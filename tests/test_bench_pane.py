"""The Bench tab, driven by recorded JSON-lines streams from real llama.cpp sweeps."""
from __future__ import annotations

import json
import sys
from pathlib import Path

from textual.widgets import Button

from console.bench.events import parse_line
from console.bench.results import RunStore
from console.session import HostSession
from profiles.profile import profile_from_dict
from console.bench.process import sweep_argv as bench_argv
from screens.bench_pane import BenchPane
from tests.harness import HostApp, wait_until
from widgets.bench_compare import BenchCompareTable
from widgets.bench_table import BenchLevelTable, level_cells, narrow_cells

FIXTURES = Path(__file__).parent / "fixtures" / "bench"
OK = FIXTURES / "sweep_ok.jsonl"
DIED = FIXTURES / "sweep_died.jsonl"


class BenchApp(HostApp):
    def __init__(self, readonly: bool = False, url: str | None = "http://127.0.0.1:9", session=None) -> None:
        if session is None:
            profile = profile_from_dict("local", {"server": {"url": url}} if url else {})
            session = HostSession.open(profile, readonly=readonly)
        super().__init__(BenchPane(id="pane-bench"), session)


def replaying(path: Path, *extra: str):
    return lambda values, profile, tunnelled: [sys.executable, str(FIXTURES / "replay.py"), str(path), *extra]


async def press_start(pilot, confirm: bool = True) -> None:
    """Press Start and wait until the tab has decided (it checks the host's earlier runs off the
    loop first): the sweep started, or it asks first (a sweep larger than any before; answered yes
    with `confirm`), or it said why not."""
    app = pilot.app
    pane = app.query_one(BenchPane)
    run_id, error = pane.view.run_id, str(pane.query_one("#bp-error").render())

    def asking() -> bool:
        return app.screen.__class__.__name__ == "Confirm"

    def started() -> bool:
        return pane.proc is not None or pane.view.run_id != run_id

    await pilot.pause()
    app.query_one("#bf-start", Button).press()
    await wait_until(pilot, lambda: asking() or started() or str(pane.query_one("#bp-error").render()) != error,
                     30, "the sweep to start, or the question before it, or the reason it cannot")
    if confirm and asking():
        await pilot.press("y")
        await wait_until(pilot, started, 30, "the sweep to start after the yes")


def drawn_as_viewed(pane) -> bool:
    """The tab shows its view as it is now: the table's rows, the status line and the tab title
    (progress is drawn a few times a second, so what is drawn can trail the data)."""
    view, table = pane.view, pane.query_one(BenchLevelTable)
    if table.row_count != len(view.levels):
        return False
    for i, level in enumerate(view.levels):
        cells = narrow_cells(level) if table.narrow else level_cells(level)
        if [str(c) for c in table.get_row(str(i))] != [c.plain for c in cells]:
            return False
    summaries = pane.app.summaries
    return (str(pane.query_one("#bp-status").render()) == pane._status(view)
            and bool(summaries) and summaries[-1] == view.summary_text())


async def run_to_end(pilot, pane) -> None:
    """Until the sweep has ended, its end reached the tab (the exit status in its view) and the
    tab has drawn it."""
    await wait_until(pilot, lambda: pane.proc is None and pane.view.levels and pane.view.exit_code is not None
                     and not pane.has_class("running") and drawn_as_viewed(pane),
                     30, "the sweep's end drawn in the tab")


def saved_run(path: Path, run_id: str) -> Path:
    """A recording's level summaries saved as a run, the way the load generator saves it."""
    events = [parse_line(line) for line in path.read_text().splitlines()]
    start = next(e for e in events if e["event"] == "run-start")
    store = RunStore("local", run_id)
    doc = {"run_id": run_id, "url": start["url"], "model": start["model"], "workload": start["workload"],
           "started": f"2026-11-29T{run_id[-6:-4]}:00:00", "status": "done",
           "levels": [e["summary"] for e in events if e["event"] == "level-end"]}
    doc["path"] = str(store.path)
    store.save(doc)
    return store.path


async def test_live_sweep_with_a_server_death():
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(DIED)
        await press_start(pilot)
        await run_to_end(pilot, pane)
        statuses = [lv.status for lv in pane.view.levels]
        assert statuses == ["ok", "failed", "skipped"]
        table = pane.query_one(BenchLevelTable)
        died = [str(c) for c in table.get_row("1")]
        assert "failed" in died[1]
        assert "server died: connection refused from" in died[-1]
        assert [str(c) for c in table.get_row("2")][-1] == "skipped: level 2 failed"
        ticks = sum(1 for line in DIED.read_text().splitlines() if '"tick"' in line)
        assert len(pane.view.series) == ticks
        assert [c for _, c in pane.view.boundaries] == [1, 2]
        assert app.summaries[-1] == "✖ 1/3"
        status = str(pane.query_one("#bp-status").render())
        assert "client lag" in status and "saved sweep-" in status


async def test_live_values_while_running_then_final_ones():
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        lines = OK.read_text().splitlines()
        first_level_end = next(i for i, line in enumerate(lines) if '"level-end"' in line)
        pane.launcher = replaying(OK, "--hold-after", str(first_level_end + 6))
        await press_start(pilot)
        table = pane.query_one(BenchLevelTable)

        def drawn(key: str) -> list[str]:
            return [str(c) for c in table.get_row(key)] if key in table.rows else []

        # the pane draws a sweep's progress a few times a second: wait for the frame, not only the data
        await wait_until(pilot, lambda: pane.view.levels and pane.view.levels[1].status == "running"
                         and len(pane.view.series) > 2 and app.summaries and app.summaries[-1] == "■ 1/3"
                         and drawn("1") and "running" in drawn("1")[1],
                         30, "the second level running, drawn")
        row0, row1 = drawn("0"), drawn("1")
        assert "ok" in row0[1] and "100%" in row0[2]
        assert "running" in row1[1]
        assert app.summaries[-1] == "■ 1/3"
        assert "server: gen" in str(pane.query_one("#bp-status").render())  # llama.cpp ran with --metrics
        # stop, with a confirmation that defaults to Cancel
        await pilot.press("s")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "Confirm" and app.screen.focused is not None,
                         what="the stop confirmation")
        await pilot.press("y")
        await run_to_end(pilot, pane)
        assert pane.proc is None
        assert pane.view.levels[1].status == "partial" and pane.view.exit_code == 3
        # the server's live gauges ("running N") end with the sweep
        assert "server: gen" not in str(pane.query_one("#bp-status").render())


async def test_finished_run_all_ok():
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(OK)
        await press_start(pilot)
        await run_to_end(pilot, pane)
        assert [lv.status for lv in pane.view.levels] == ["ok", "ok", "ok"]
        assert app.summaries[-1] == "✔ 3/3"
        row = [str(c) for c in pane.query_one(BenchLevelTable).get_row("2")]
        assert row[3] == "6/0" and row[4] != "N/A"


async def test_compare_with_an_earlier_run():
    earlier = saved_run(DIED, "sweep-20261129-100000")
    saved_run(OK, "sweep-20261129-110000")
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        # the saved runs are read off the UI thread when the tab opens
        await wait_until(pilot, lambda: pane.view.run_id == "sweep-20261129-110000",
                         what="the latest run shown on opening")
        table = pane.query_one(BenchLevelTable)
        table.focus()
        await wait_until(pilot, lambda: app.focused is table, what="the level table focused")
        await pilot.press("c")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "PickRun", what="the run picker")
        await pilot.press("enter")
        await wait_until(pilot, lambda: pane.has_class("comparing"), 10, "the comparison")
        assert pane.overlay is not None and pane.overlay[0] == "sweep-20261129-100000"
        compare = pane.query_one(BenchCompareTable)
        assert compare.row_count == 3
        row = [str(c) for c in compare.get_row("2")]
        assert row[1] == "failed → ok"
        assert earlier.exists()
        # named, one way: A is the run that started first, as `gpudeck bench --compare` says it
        head = str(pane.query_one("#bp-compare-head").render())
        assert head.startswith("A sweep-20261129-100000 → B sweep-20261129-110000")


async def test_compare_reads_a_to_b_when_the_later_run_is_the_one_picked():
    """The run on screen started first and the picked one later: still A (the earlier) → B."""
    from console.bench.results import load_run

    earlier = saved_run(DIED, "sweep-20261129-100000")
    later = saved_run(OK, "sweep-20261129-110000")
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        await wait_until(pilot, lambda: pane.view.run_id == "sweep-20261129-110000", what="the latest run shown")
        from console.bench.live import view_from_run

        pane.view = view_from_run(load_run(earlier))
        pane.compare_with(str(later))
        await wait_until(pilot, lambda: pane.has_class("comparing"), 10, "the comparison")
        head = str(pane.query_one("#bp-compare-head").render())
        assert head.startswith("A sweep-20261129-100000 → B sweep-20261129-110000")
        assert [str(c) for c in pane.query_one(BenchCompareTable).get_row("2")][1] == "failed → ok"


async def test_readonly_cannot_start():
    app = BenchApp(readonly=True)
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(OK)
        assert pane.check_action("start", ()) is False
        await press_start(pilot)
        await wait_until(pilot, lambda: "read-only" in str(pane.query_one("#bp-error").render()), 10,
                         "the read-only refusal")
        assert pane.proc is None and not pane.view.levels


def test_argv_for_the_load_generator():
    argv = bench_argv({"url": "http://h:1", "levels": "1,2", "input_len": "64", "output_len": "8",
                       "num_prompts": "", "model": "m", "api": "chat"}, "box", True)
    assert argv[1:3] == ["-m", "console.bench"]
    assert argv[3:] == ["--url", "http://h:1", "--concurrency", "1,2", "--api", "chat", "--profile", "box",
                        "--events", "--input-len", "64", "--output-len", "8", "--model", "m", "--tunnelled"]
    with_port = bench_argv({"url": "http://127.0.0.1:5", "levels": "1", "server_port": 30000}, "box", True)
    assert with_port[-3:] == ["--tunnelled", "--server-port", "30000"]
    rates = bench_argv({"url": "http://h:1", "levels": "1,2", "request_rate": "2,4", "max_concurrency": "8",
                        "burstiness": "0.5", "shared_prefix_len": "16", "api_key_env": "KEY"}, "box", False)
    assert rates[3:7] == ["--url", "http://h:1", "--request-rate", "2,4"] and "--concurrency" not in rates
    assert rates[-8:] == ["--max-concurrency", "8", "--shared-prefix-len", "16", "--burstiness", "0.5",
                          "--api-key-env", "KEY"]
    closed = bench_argv({"url": "http://h:1", "levels": "1,2", "max_concurrency": "8", "burstiness": "0.5"},
                        "box", False)
    assert "--max-concurrency" not in closed and "--burstiness" not in closed  # they shape rates only
    tunnel = bench_argv({"url": "http://127.0.0.1:5", "levels": "1", "server_port": 30000,
                         "server_url": "http://127.0.0.1:30000"}, "box", True)
    assert tunnel[-2:] == ["--server-url", "http://127.0.0.1:30000"]


def test_bench_view_snapshot(snap_compare):
    saved_run(DIED, "sweep-20261129-140000")

    async def run_before(pilot) -> None:
        """The saved run is read off the loop when the host attaches: the snapshot waits for it."""
        pane = pilot.app.query_one(BenchPane)
        await wait_until(pilot, lambda: pane._last_measured is not None and pane.view.levels, 30, "the saved run")
        await pilot.pause()

    assert snap_compare(BenchApp(url=None), terminal_size=(150, 40), run_before=run_before)


async def test_real_sweep_from_the_tab(llama_server):
    """The whole path: form -> `python -m console.bench --events` -> worker -> table, against llama.cpp."""
    from textual.widgets import Input

    app = BenchApp(url=llama_server.url)
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        for key, value in (("levels", "1,2"), ("input_len", "8"), ("output_len", "8"), ("num_prompts", "2")):
            pane.query_one(f"#bf-{key}", Input).value = value
        model = pane.query_one("#bf-model")
        await wait_until(pilot, lambda: model.value not in (None, model.BLANK), 30,
                         "the model list from /v1/models")
        await press_start(pilot)
        # a bound for a shared, busy machine, not a speed check
        await wait_until(pilot, lambda: pane.proc is None and pane.view.levels and pane.view.exit_code is not None,
                         120, "the sweep's end")
        state = [(lv.status, lv.completed, lv.failed, lv.explanation) for lv in pane.view.levels]
        assert [lv.status for lv in pane.view.levels] == ["ok", "ok"], (state, pane.proc,
                                                                        str(pane.query_one("#bp-error").render()))
        assert pane.view.model and pane.view.path and Path(pane.view.path).exists()
        assert json.loads(Path(pane.view.path).read_text())["levels"][1]["completed"] == 2


async def test_a_no_models_note_clears_once_m_finds_the_model(llama_server):
    from textual.widgets import Input

    from tests.harness import wait_until
    from tests.realparts import free_port

    app = BenchApp(url=f"http://127.0.0.1:{free_port()}")  # nothing listens there
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        error = pane.query_one("#bp-error")
        await wait_until(pilot, lambda: "no models listed" in str(error.render()), 15, "the note")
        pane.query_one("#bf-url", Input).value = llama_server.url
        pane.query_one(BenchLevelTable).focus()
        await pilot.press("m")
        await wait_until(pilot, lambda: pane.query_one("#bf-model").value not in (None, pane.query_one("#bf-model").BLANK),
                         15, "the model list")
        assert "no models listed" not in str(error.render())


async def test_loopback_endpoint_of_an_ssh_host_goes_through_a_tunnel(ssh_profile, llama_server):
    """The server listens on the remote host's loopback: the sweep runs through an SSH forward and says so."""
    from textual.widgets import Input

    from profiles import store

    ssh_profile.server.url = llama_server.url  # 127.0.0.1 as the SSH host sees it
    store.save(ssh_profile)
    session = HostSession.open(ssh_profile)
    app = BenchApp(session=session)
    try:
        async with app.run_test(size=(150, 45)) as pilot:
            pane = app.query_one(BenchPane)
            for key, value in (("levels", "1"), ("input_len", "8"), ("output_len", "8"), ("num_prompts", "2")):
                pane.query_one(f"#bf-{key}", Input).value = value
            await press_start(pilot)
            await wait_until(pilot, lambda: pane.proc is None and pane.view.levels and pane.view.exit_code is not None
                             and "via ssh tunnel" in str(pane.query_one("#bp-head").render()),
                             60, "the sweep's end, drawn")
            assert [lv.status for lv in pane.view.levels] == ["ok"], [lv.explanation for lv in pane.view.levels]
            # through the tunnel, and the run names the server's own URL, not the tunnel's local port
            assert pane.view.tunnelled and pane.view.url == llama_server.url
            assert "via ssh tunnel" in str(pane.query_one("#bp-head").render())
            saved = json.loads(Path(pane.view.path).read_text())
            assert saved["tunnelled"] is True and saved["profile"] == "testbox"
            assert saved["config"]["server_port"] == llama_server.port
    finally:
        await session.host.close()


async def _set(pilot, pane, **values) -> None:
    from textual.widgets import Input

    form = pane.query_one("BenchForm")
    for key, value in values.items():
        pane.query_one(f"#bf-{key}", Input).value = value
    await wait_until(pilot, lambda: all(form.values()[key] == value for key, value in values.items()),
                     what="the form holding the values")


async def test_form_remembers_the_last_settings_per_profile():
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(OK)
        await _set(pilot, pane, levels="1,2,4", input_len="64", output_len="32", num_prompts="2c")
        await press_start(pilot)
        await run_to_end(pilot, pane)
    app = BenchApp()  # the console restarts
    async with app.run_test(size=(150, 45)) as pilot:
        form = app.query_one(BenchPane).query_one("BenchForm")

        def remembered():
            values = form.values()
            return (values["levels"], values["input_len"], values["output_len"], values["num_prompts"])

        # the remembered form is read off the UI thread when the tab opens
        await wait_until(pilot, lambda: remembered() == ("1,2,4", "64", "32", "2c"), what="the remembered form")


async def test_a_sweep_larger_than_any_before_on_the_host_is_asked_about():
    saved_run(DIED, "sweep-20261129-140000")  # levels 1,2,4 ran before
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(OK)
        await _set(pilot, pane, levels="1,2,512")
        await press_start(pilot, confirm=False)
        assert app.screen.__class__.__name__ == "Confirm"
        shown = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert "up to 512 streams" in shown and "the largest run before on local was 4 streams" in shown
        await pilot.press("escape")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ != "Confirm", what="Esc answering no")
        assert pane.proc is None
        await _set(pilot, pane, levels="1,4")
        await press_start(pilot, confirm=False)
        assert app.screen.__class__.__name__ != "Confirm"  # no larger than before: it just runs
        await run_to_end(pilot, pane)
        assert [lv.status for lv in pane.view.levels] == ["ok", "ok", "ok"]


async def _enter_on_c2_of_a_saved_run(app, pilot):
    """The saved run's levels (read off the UI thread when the tab opens), Enter on c=2; its note."""
    pane = app.query_one(BenchPane)
    table = pane.query_one(BenchLevelTable)
    await wait_until(pilot, lambda: table.row_count == 3, what="the saved run's levels")
    table.focus()
    table.move_cursor(row=1)
    await wait_until(pilot, lambda: app.focused is table and table.cursor_row == 1, what="the cursor on c=2")
    await pilot.press("enter")
    note = pane.query_one("#bp-note")
    await wait_until(pilot, lambda: str(note.render()).strip() != "", what="the level's note")
    return note


async def test_enter_on_a_level_shows_its_whole_note():
    saved_run(DIED, "sweep-20261129-140000")
    app = BenchApp(url=None)
    async with app.run_test(size=(100, 45)) as pilot:
        note = await _enter_on_c2_of_a_saved_run(app, pilot)
        assert str(note.render()).startswith("c=2: server died: connection refused from ")


async def test_a_stale_no_models_note_clears_once_the_model_is_found(monkeypatch):

    answers = [[], ["smol"]]

    async def fake_list(url, timeout=3.0):
        return answers.pop(0) if answers else ["smol"]

    monkeypatch.setattr("console.bench.endpoint.list_models", fake_list)  # what the runtime asks
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        error = pane.query_one("#bp-error")
        await wait_until(pilot, lambda: "no models listed" in str(error.render()), what="the no-models note")
        pane.action_models()
        await wait_until(pilot, lambda: pane.query_one("#bf-model").value == "smol", what="the model found")
        assert str(error.render()).strip() == ""


async def test_m_with_the_model_already_filled_in_says_so(monkeypatch):
    """`m` when the form already holds the server's model changes nothing in the form: a notice says so."""

    async def fake_list(url, timeout=3.0):
        return ["smol"]

    monkeypatch.setattr("console.bench.endpoint.list_models", fake_list)
    app = BenchApp()
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        await wait_until(pilot, lambda: pane.query_one("#bf-model").value == "smol", what="the model filled in")
        assert not any("already" in n.message for n in app._notifications)  # the tab's own look says nothing
        pane.action_models()  # what `m` runs
        await wait_until(pilot, lambda: any("model already filled in: smol" in n.message for n in app._notifications),
                         what="the already-filled notice")


async def test_a_host_switch_never_leaves_the_last_hosts_settings_in_the_form():
    """Host A has a server URL and bench settings; host B has neither. After switching to B the form
    shows the defaults, not A's URL (a Start there would have benchmarked A's server)."""
    from widgets.bench_form import FIELDS

    a = profile_from_dict("a", {"server": {"url": "http://127.0.0.1:9"},
                                "bench": {"concurrency": "3,5", "input_len": 77, "output_len": 11}})
    app = BenchApp(session=HostSession.open(a))
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(BenchPane)
        form = pane.query_one("BenchForm")
        await wait_until(pilot, lambda: form.values()["url"] == "http://127.0.0.1:9", what="host a's URL")
        assert (form.values()["levels"], form.values()["input_len"]) == ("3,5", "77")
        await pane.set_session(HostSession.open(profile_from_dict("b", {})))
        defaults = {key: default for key, _label, default, _width, _placeholder in FIELDS}
        assert {key: form.values()[key] for key in defaults} == defaults
        assert form.values()["model"] is None


async def test_a_levels_note_goes_when_another_run_is_shown():
    """Enter on a level writes its note under the table; a new sweep's levels are not that run's,
    so the note about c=2 of the earlier run must not stay under them."""
    saved_run(DIED, "sweep-20261129-140000")
    app = BenchApp()
    async with app.run_test(size=(100, 45)) as pilot:
        note = await _enter_on_c2_of_a_saved_run(app, pilot)
        assert str(note.render()).startswith("c=2: server died")
        pane = app.query_one(BenchPane)
        pane.launcher = replaying(OK)
        await press_start(pilot)
        await run_to_end(pilot, pane)
        assert pane.view.run_id != "sweep-20261129-140000"
        assert str(note.render()).strip() == ""
