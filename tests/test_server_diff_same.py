"""`d` on two configs whose flags are the same says "no differences" (a table of equal rows left the
operator to read every one to find out)."""
from __future__ import annotations

from profiles import store
from screens.app import GpudeckApp
from tests.harness import wait_until


async def test_identical_configs_diff_says_no_differences(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in ("a", "b"):
        (scripts / f"{name}.sh").write_text("#!/bin/sh\nexec llama-server -m /m.gguf --port 8000 -c 4096\n")
    (scripts / "c.sh").write_text("#!/bin/sh\nexec llama-server -m /m.gguf --port 8000 -c 8192\n")
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    store.save(profile)
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: len([c for c in pane.configs if c.parsed]) == 3, what="the configs parsed")
        await wait_until(pilot, lambda: pane.selected == "a", what="the first config selected")
        promise = pane.query_one("#promise")
        await pilot.press("d")  # a vs b: the same flags
        await wait_until(pilot, lambda: "diff: a  vs  b" in str(promise.render()), what="the diff a vs b")
        assert "no differences" in str(promise.render())
        await pilot.press("d")  # a vs c: the context differs
        await wait_until(pilot, lambda: "diff: a  vs  c" in str(promise.render()), what="the diff a vs c")
        assert "no differences" not in str(promise.render())
