"""A saved run names the launch config it measured (the sweep records the launch serving its port,
`server_launch`), and the Roofline tab, the report's roofline section and the run lists say it; a run
saved before the field, or against a server gpudeck did not launch, still loads and says the config
is unknown."""
from __future__ import annotations

import os

from console.report.sections import roofline_section
from console.store.runs import read_runs, run_line
from screens.roofline_pane import RooflinePane
from tests.harness import wait_until
from tests.test_roofline_pane import SWEEP, PaneApp, _drawn, _session

LAUNCHED = {**SWEEP, "run_id": "sweep-new", "started": "2026-12-01T11:00:00", "status": "ok",
            "url": "http://127.0.0.1:30000", "model": "glm-5",
            "server_launch": {"config": "run_tp8_cds16", "flags": {"tp": "8"}, "launch": "run_tp8_cds16-1", "pid": 41}}
OLD = {**SWEEP, "run_id": "sweep-old", "started": "2026-12-01T10:00:00", "status": "ok",
       "url": "http://127.0.0.1:30000", "model": "glm-5"}   # saved before runs named their config


def _aged(session) -> None:
    runs = session.data_dir / "runs"
    for i in range(2):
        os.utime(runs / f"sweep-{i}.json", (1_000_000_000 + i, 1_000_000_000 + i))


async def test_the_roofline_tab_names_the_config_of_its_run_at_100x30(shared_dir):
    session = _session(shared_dir, [OLD, LAUNCHED])
    _aged(session)
    app = PaneApp(session)
    async with app.run_test(size=(100, 30)) as pilot:
        await _drawn(pilot, app)
        pane = app.query_one(RooflinePane)
        run = pane.query_one("#rl-run")
        assert str(run.render()).startswith("reads sweep-new · config run_tp8_cds16 ·")
        assert run.region.height >= 1 and run.region.width > 0
        await pilot.press("p")
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "PickRun", what="the run picker")
        await pilot.press("down", "enter")   # newest first: sweep-new, sweep-old
        await wait_until(pilot, lambda: str(pane.query_one("#rl-run").render()).startswith("reads sweep-old"),
                         what="the old run read")
        assert "config unknown (a server gpudeck did not launch)" in str(pane.query_one("#rl-run").render())


def test_the_report_and_the_run_lists_name_it(shared_dir):
    session = _session(shared_dir, [OLD, LAUNCHED])
    _aged(session)
    runs = read_runs(folder=session.data_dir / "runs").records
    assert [(r.id, r.config) for r in runs] == [("sweep-new", "run_tp8_cds16"), ("sweep-old", None)]
    assert run_line(runs[0].summary()).endswith("levels 1,64,256  config run_tp8_cds16")
    assert run_line(runs[1].summary()).endswith("levels 1,64,256")
    roof = {"model": {"name": "glm-5"}, "levels": []}
    text = roofline_section(roof, None, {}, {"name": "sweep-new", "doc": LAUNCHED})
    assert "- Measured: run sweep-new (the newest run that measured), config run_tp8_cds16, started" in text
    text = roofline_section(roof, None, {}, {"name": "sweep-old", "doc": OLD})
    assert "config unknown (a server gpudeck did not launch)" in text
