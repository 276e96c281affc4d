"""The Roofline tab in a small app: headline, table, what-if recompute, missing runs."""
from __future__ import annotations

import json


from console.session import HostSession
from profiles.profile import profile_from_dict
from screens.roofline_pane import RooflinePane
from tests.harness import HostApp, wait_until


def _session(shared_dir, runs: list[dict] | None, config: bool = True):
    c = shared_dir / "model-configs"
    model = {"config": str(c / "GLM-5-NVFP4.json"), "quant_config": str(c / "GLM-5-NVFP4.hf_quant_config.json")} if config else {}
    prof = profile_from_dict("rtx6000", {"model": model,
                                         "gpu": {"name": "NVIDIA RTX PRO 6000 Blackwell Server Edition", "count": 8}})
    session = HostSession.open(prof)
    if runs is not None:
        d = session.data_dir / "runs"
        d.mkdir(parents=True)
        for i, doc in enumerate(runs):
            (d / f"sweep-{i}.json").write_text(json.dumps(doc) if isinstance(doc, dict) else doc)
    return session


def PaneApp(session) -> HostApp:
    return HostApp(RooflinePane(), session, footer=False, title="PaneApp")


async def _drawn(pilot, app) -> None:
    """The runs were read and the roofline worked out off the UI thread, then drawn (each drawing
    sends the app the tab title)."""
    await wait_until(pilot, lambda: bool(app.summaries), what="the roofline drawn")


SWEEP = {"levels": [{"concurrency": 1, "output_throughput": 10.36, "status": "ok"},
                    {"concurrency": 64, "output_throughput": 540.2, "status": "ok"},
                    {"concurrency": 256, "output_throughput": None, "status": "failed"}]}


async def test_headline_and_table_from_latest_run(shared_dir):
    app = PaneApp(_session(shared_dir, [SWEEP]))
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        pane = app.query_one(RooflinePane)
        sentence = str(pane.query_one("#rl-sentence").render())
        assert "10.36 / 324 tok/s" in sentence and "of the ideal roofline" in sentence
        table = pane.query_one("RooflineTable")
        assert table.row_count == 6
        row64 = [str(c) for c in table.get_row("64")]
        assert row64[3] == "540.2" and row64[4].endswith("%")
        assert [str(c) for c in table.get_row("256")][3] == "failed"
        assert app.summaries[-1] == "3.2%"


async def test_a_failed_sweep_does_not_hide_an_earlier_measurement_and_another_run_can_be_picked(shared_dir):
    import os

    failed = {"levels": [{"concurrency": 1, "output_throughput": None, "status": "failed"}]}
    other = {"levels": [{"concurrency": 1, "output_throughput": 9.78, "status": "ok"}]}
    session = _session(shared_dir, [other, SWEEP, failed])
    runs = session.data_dir / "runs"
    for i in range(3):  # oldest first: other, SWEEP, then the failed sweep
        os.utime(runs / f"sweep-{i}.json", (1_000_000_000 + i, 1_000_000_000 + i))
    app = PaneApp(session)
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        pane = app.query_one(RooflinePane)
        sentence = str(pane.query_one("#rl-sentence").render())
        assert "10.36 / 324 tok/s" in sentence  # the newest run that measured, not the failed one
        await pilot.press("p")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "PickRun", what="the run picker")
        from console.bench.results import list_runs

        assert app.screen.runs == list_runs("rtx6000")  # listed as the Bench tab's picker and bench --list list them
        await pilot.press("down", "down", "enter")  # newest first: failed, SWEEP, other
        await wait_until(pilot, lambda: app.screen.__class__.__name__ != "PickRun", what="the picker closed")
        await wait_until(pilot, lambda: "9.78 / 324 tok/s" in str(pane.query_one("#rl-sentence").render()),
                         what="the headline against the picked run")


async def test_no_runs_says_so_never_zero(shared_dir):
    app = PaneApp(_session(shared_dir, None))
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        pane = app.query_one(RooflinePane)
        assert "no measured run yet" in str(pane.query_one("#rl-sentence").render())
        measured = [str(pane.query_one("RooflineTable").get_row(str(b))[3]) for b in (1, 64)]
        assert measured == ["N/A", "N/A"]  # the one unknown marker (console.fmt.UNKNOWN)


async def test_unreadable_run_is_reported(shared_dir):
    app = PaneApp(_session(shared_dir, ["{not json", SWEEP]))
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        assert "unreadable" in str(app.query_one("#rl-status").render())


async def test_whatif_recomputes(shared_dir):
    app = PaneApp(_session(shared_dir, [SWEEP]))
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        pane = app.query_one(RooflinePane)
        before = pane.roof.single_stream_realistic
        await pilot.press("w")
        await wait_until(pilot, lambda: pane.has_class("whatif"), what="w opening the what-if")
        # each field's change reaches the pane as a message (the field's, then the form's): wait for the redraw
        pane.query_one("#wi-allreduce_alpha_us").value = "10"
        await wait_until(pilot, lambda: pane.roof is not None and pane.roof.setup.knobs["allreduce_alpha_us"] == 10,
                         what="the roofline with alpha 10")
        assert pane.roof.single_stream_realistic < before
        pane.query_one("#wi-gpu").value = "B200"
        await wait_until(pilot, lambda: pane.roof is not None and pane.roof.setup.gpu.key == "b200",
                         what="the roofline on B200")
        pane.query_one("#wi-tp").value = "3"
        await wait_until(pilot, lambda: pane.roof is None, what="tp 3 refused")  # tp 3 does not divide 8
        assert "tp 3" in str(pane.query_one("#rl-sentence").render())  # the headline says why
        pane.query_one("#wi-tp").value = ""
        await wait_until(pilot, lambda: pane.roof is not None, what="the roofline back with tp from the profile")
        pane.query_one("#wi-gpu").focus()
        pane.action_reset()
        assert pane.roof.setup.gpu.key == "rtx-pro-6000-blackwell"


async def test_profile_without_model_config_explains(shared_dir):
    app = PaneApp(_session(shared_dir, None, config=False))
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        sentence = str(app.query_one("#rl-sentence").render())
        # a command that sets only these keys: `profiles add --force` dropped the profile's [server] section
        assert "gpudeck profiles set rtx6000 model.config=" in sentence and "--force" not in sentence
        assert "gpu.name=" in sentence and "gpu.count=" in sentence and "[model]" not in sentence
        assert app.summaries[-1] == "N/A"


def test_snapshot(snap_compare, shared_dir, gpudeck_home):
    session = _session(shared_dir, [SWEEP])
    # the run file's name and contents are fixed, so the picture is stable
    assert snap_compare(PaneApp(session), terminal_size=(160, 45))


CALIBRATED = {"levels": [
    {"concurrency": 1, "output_throughput": 10.36, "status": "ok", "tpot_ms": {"median": 96.3}},
    {"concurrency": 2, "output_throughput": 20.3, "status": "ok", "tpot_ms": {"median": 98.4}},
    {"concurrency": 10, "output_throughput": 95.0, "status": "ok", "tpot_ms": {"median": 105.0}},
    {"concurrency": 64, "output_throughput": None, "status": "failed"}]}


async def test_calibration_line_and_fitted_column(shared_dir):
    app = PaneApp(_session(shared_dir, [CALIBRATED]))
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        pane = app.query_one(RooflinePane)
        text = str(pane.query_one("#rl-calibration").render())
        assert text.startswith("calibration from sweep-0: η ") and "ms/step" in text and "levels 1,2,10" in text
        assert "per-step overhead is" in text and "512 streams would give ~" in text
        table = pane.query_one("RooflineTable")
        fitted_64 = str(table.get_row("64")[5])
        assert fitted_64 not in ("N/A", "—") and float(fitted_64.replace(",", "")) > 0
        assert [str(c) for c in table.get_row("64")][3] == "failed"


async def test_the_tab_names_the_run_it_reads_and_says_when_it_is_still_running(shared_dir):
    """Which run the efficiency reads is named (id, start, server, model, levels, why this one); a
    sweep still running is said to be in progress; a run picked with p is said to be kept."""
    import os

    done = {**SWEEP, "run_id": "sweep-a", "started": "2026-12-01T10:00:00", "status": "ok",
            "url": "http://127.0.0.1:30000", "model": "glm-5"}
    running = {"run_id": "sweep-b", "started": "2026-12-01T11:00:00", "status": "running",
               "url": "http://127.0.0.1:30000", "model": "glm-5",
               "levels": [{"concurrency": 1, "output_throughput": 9.1, "status": "ok"}]}
    session = _session(shared_dir, [done, running])
    runs = session.data_dir / "runs"
    for i in range(2):
        os.utime(runs / f"sweep-{i}.json", (1_000_000_000 + i, 1_000_000_000 + i))
    app = PaneApp(session)
    async with app.run_test(size=(160, 45)) as pilot:
        await _drawn(pilot, app)
        pane = app.query_one(RooflinePane)
        line = str(pane.query_one("#rl-run").render())
        assert line.startswith("reads sweep-b") and "http://127.0.0.1:30000" in line and "levels 1" in line and "newest measured" in line
        assert "still in progress" in line
        await pilot.press("p")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "PickRun", what="the run picker")
        await pilot.press("down", "enter")  # newest first: sweep-b, sweep-a
        await wait_until(pilot, lambda: str(pane.query_one("#rl-run").render()).startswith("reads sweep-a"),
                         what="the picked run named")
        line = str(pane.query_one("#rl-run").render())
        assert "picked, kept" in line and "in progress" not in line and "levels 1,64,256" in line
