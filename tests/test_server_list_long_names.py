"""The Server tab's list at 100x30 once a campaign has added its grid configs (long names such as
`run_tp8_cds16+cuda-graph-max-bs=32`): the state column stays on screen (the names are cut in the
middle to the room left), and two names that differ only at their end still read differently."""
from __future__ import annotations

from profiles import store
from screens.app import GpudeckApp
from tests.harness import wait_until

NAMES = ("run_tp8_cds16", "run_tp8_cds16+cuda-graph-max-bs=32", "run_tp8_cds16+cuda-graph-max-bs=64")


async def test_state_column_stays_when_long_config_names_arrive(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in NAMES:
        (scripts / f"{name}.sh").write_text("#!/bin/sh\nexec llama-server -m /m.gguf --port 8000\n")
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    store.save(profile)
    app = GpudeckApp()
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        pane = app.panes["server"]
        await pilot.press("2")
        table = pane.query_one("#configs")
        await wait_until(pilot, lambda: all(n in table.rows for n in NAMES) and table.size.width > 0,
                         what="the configs listed")
        await pilot.pause()
        labels = [str(c.label) for c in table.columns.values()]
        assert labels[:2] == ["config", "state"]
        widths = sum(c.get_render_width(table) for c in table.columns.values())
        assert widths <= table.scrollable_content_region.width, "the list is wider than its box: state is cut"
        rows = [table.get_row(name) for name in NAMES]  # other servers on the host may be listed too
        assert str(rows[1][0]) != str(rows[2][0]) and str(rows[1][0]).endswith("=32") and str(rows[2][0]).endswith("=64")
        assert all(str(row[1]).strip() for row in rows)  # a state in every row
