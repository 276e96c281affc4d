"""The Server tab's log keys with Pilot: # numbers, j marks the decisive line, / counts matches, y/Y copy, f/End follow."""
from __future__ import annotations

from console.clip import clip_file
from console.store import launches
from console.store.launches import LaunchRecord
from profiles import store
from screens.app import GpudeckApp
from tests.harness import wait_until
from widgets.log_view import DECISIVE_MARK, LogView


def _old_launch(tmp_path):
    log = tmp_path / "old.log"
    log.write_text("".join(f"line {i} {'ERROR boom' if i in (40, 70) else 'ok'}\n" for i in range(1, 101)))
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "old.sh").write_text("#!/bin/sh\ntrue\n")
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    store.save(profile)
    launches.save("local", LaunchRecord(id="old-1", config="old", script=str(scripts / "old.sh"), log=str(log),
                                       exit_file=None, state="crashed", exit_status=1))


async def test_log_keys(tmp_path, monkeypatch):
    monkeypatch.setenv("GPUDECK_CLIPBOARD", "file")
    _old_launch(tmp_path)
    app = GpudeckApp()
    async with app.run_test(size=(160, 45), notifications=True) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        view = pane.query_one(LogView)
        await wait_until(pilot, lambda: len(view.lines) == 100)
        view.focus()
        await wait_until(pilot, lambda: app.focused is view, what="the log focused")
        # line numbers
        await pilot.press("number_sign")
        await wait_until(pilot, lambda: view.numbers, what="# turning line numbers on")
        # search: k/n, then the wrap is said
        def said() -> list[str]:
            return [n.message for n in app._notifications]
        await pilot.press("slash", *"boom", "enter")
        await wait_until(pilot, lambda: any("match 1/2" in m for m in said()), what="'match 1/2' said")
        await pilot.press("n")
        await pilot.press("n")
        await wait_until(pilot, lambda: any("match 1/2" in m and "wrapped" in m for m in said()),
                         what="the wrap said")
        # back to following with one key
        await pilot.press("end")
        await wait_until(pilot, lambda: view.follow and view.current is None, what="End following the log again")
        # j: the decisive line is the current line and marked unlike the other error line
        from console.store.crashes import CrashRecord

        pane.last_crash = CrashRecord(id="old-1", config="old", cls="cuda-illegal-address",
                                      time="2026-11-30T08:00:00", launch="old-1", line=70,
                                      excerpt=("line 69 ok", "line 70 ERROR boom", "line 71 ok"))
        await pilot.press("j")
        await wait_until(pilot, lambda: view.decisive == 70, what="the decisive line marked")
        assert view.current_line() == (70, "line 70 ERROR boom")
        rows = {number: "".join(s.text for s in view._render_line_strip(i, view.rich_style))
                for i, number in enumerate(view.shown)}
        assert DECISIVE_MARK in rows[70] and DECISIVE_MARK not in rows[40]
        # y copies the current line, Y the crash excerpt; this terminal takes no OSC 52: a file, its path shown
        await pilot.press("y")
        await wait_until(pilot, lambda: clip_file("local").exists())
        assert clip_file("local").read_text() == "line 70 ERROR boom"
        await wait_until(pilot, lambda: any(str(clip_file("local")) in n.message for n in app._notifications))
        await pilot.press("Y")
        await wait_until(pilot, lambda: clip_file("local").read_text().startswith("line 69 ok\nline 70"))
        # f brings follow back after j
        await pilot.press("f")
        await wait_until(pilot, lambda: view.follow, what="f following the log again")
