"""The Server tab driven with Pilot: launch a real llama.cpp config, see it ready, kill it."""
from __future__ import annotations

import shlex

from profiles import store
from screens.app import GpudeckApp
from screens.confirm import Confirm
from tests.harness import wait_until
from tests.realparts import free_port, llama_server_binary, smollm_model
from widgets.log_view import LogView


def _profile_with_script(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    port = free_port()
    script = scripts / "run_smol.sh"
    script.write_text(f"#!/bin/sh\nexec {shlex.quote(str(llama_server_binary()))} -m "
                      f"{shlex.quote(str(smollm_model()))} --host 127.0.0.1 --port {port} -c 1024 -np 1 -t 1\n")
    script.chmod(0o755)
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    profile.server.log_dir = str(tmp_path / "logs")
    profile.server.kill_grace_s = 10
    store.save(profile)


def _stopped_launch(tmp_path, config: str, log_text: str, exit_status: int) -> None:
    """A local profile with one config `config` whose launch has stopped, its log holding `log_text`."""
    from console.store import launches
    from console.store.launches import LaunchRecord

    log = tmp_path / f"{config}.log"
    log.write_text(log_text)
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / f"{config}.sh").write_text("#!/bin/sh\ntrue\n")
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    store.save(profile)
    launches.save("local", LaunchRecord(id=f"{config}-1", config=config, script=str(scripts / f"{config}.sh"),
                                       log=str(log), exit_file=None, state="stopped", exit_status=exit_status))


async def test_launch_ready_and_kill_from_the_keys(tmp_path):
    _profile_with_script(tmp_path)
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: pane.configs)
        pane.query_one(LogView).follow = False  # as an earlier search or jump leaves it
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the launch confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: pane.latest.get("run_smol") and pane.latest["run_smol"].state == "ready")
        assert pane.query_one(LogView).follow  # a new launch is watched live
        await wait_until(pilot, lambda: app.summaries["server"] == "1 ●")  # one config, ready
        table = pane.query_one("#configs")
        since = str(table.get_cell("run_smol", pane.since_column))
        await wait_until(pilot, lambda: str(table.get_cell("run_smol", pane.since_column)) != since)
        await wait_until(pilot, lambda: any("listening" in line for line in pane.query_one(LogView).lines))
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
        assert app.screen.focused.id == "cancel"  # the safe answer is the default
        await pilot.press("enter")  # Cancel
        await wait_until(pilot, lambda: not isinstance(app.screen, Confirm), what="the question closed")
        assert not [w for w in app.workers if w.node is pane and w.group == "action"]  # no kill began
        assert pane.latest["run_smol"].state == "ready"
        await pilot.press("k")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm))
        await pilot.press("y")
        await wait_until(pilot, lambda: pane.latest["run_smol"].state == "stopped")


async def test_readonly_has_no_launch_or_kill(tmp_path):
    _profile_with_script(tmp_path)
    app = GpudeckApp(readonly=True)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: pane.configs)
        await pilot.press("l")
        # the key is handled: it says the console is read-only
        await wait_until(pilot, lambda: any("read-only" in n.message for n in app._notifications),
                         what="the read-only notice")
        assert not [w for w in app.workers if w.node is pane and w.group == "action"]  # no launch began
        assert "run_smol" not in pane.latest
        offered = {key for key, active in app.active_bindings.items() if active.node is pane and active.enabled}
        assert "l" not in offered and "k" not in offered and "a" not in offered
        assert "f" in offered  # non-destructive keys stay


async def test_search_and_filter_the_log(tmp_path):

    _stopped_launch(tmp_path, "old", "".join(f"line {i} {'ERROR boom' if i == 40 else 'ok'}\n" for i in range(100)), 0)
    app = GpudeckApp()
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        view = pane.query_one(LogView)
        await wait_until(pilot, lambda: len(view.lines) == 100)
        await pilot.press("slash")
        await pilot.press(*"boom", "enter")
        await wait_until(pilot, lambda: int(view.scroll_y) <= 40 <= int(view.scroll_y) + view.size.height,
                         what="the match scrolled into view")
        await pilot.press("x")
        await pilot.press(*"ERROR", "enter")
        await wait_until(pilot, lambda: view.lines == ["line 40 ERROR boom"], what="the filtered log")
        await pilot.press("x")
        await wait_until(pilot, lambda: len(view.lines) == 100, what="the whole log back")


def test_the_tab_title_counts_configs_not_the_worst_state():
    from console.store.launches import LaunchRecord
    from screens.server_pane import config_summary

    def rec(config, state, crash_class=None):
        return LaunchRecord(id=config, config=config, script=None, log=None, exit_file=None, state=state,
                            crash_class=crash_class)
    assert config_summary([rec("a", "ready"), rec("b", "crashed")], 3) == "1 ● 1 ✖"
    assert config_summary([rec("a", "ready"), rec("b", "loading"), rec("c", "stopped")], 3) == "1 ● 1 ◌"
    assert config_summary([rec("a", "ready", crash_class="hang")], 1) == "1 ✖"  # alive but hung
    assert config_summary([rec("a", "stopped")], 2) == "2"


def test_a_hung_server_reads_crashed_in_its_row_as_in_the_tab_title():
    """One rule (LaunchRecord.shown_state) for the row mark, the tab title and the host chip:
    a server alive but judged dead by its log is `crashed` in each, never `ready` in one of them."""
    from console.runtime.host_runtime import HostRuntime
    from console.store.launches import LaunchRecord
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict
    from screens.server_pane import config_summary, state_badge

    hung = LaunchRecord(id="a", config="a", script=None, log=None, exit_file=None, state="ready", crash_class="hang")
    assert state_badge(hung)[0] == "✖ crashed (running)" and config_summary([hung], 1) == "1 ✖"
    store.save(profile_from_dict("box", {"transport": "local"}))
    runtime = HostRuntime(HostSession.open(store.load("box")))
    runtime.launches["a"] = hung
    assert runtime.crashed_class() == "hang"
    assert state_badge(None)[0] == "– never run"


def test_a_narrow_pane_shortens_model_paths_to_their_last_part():
    """In a 100-column split the flags table keeps the model's last path part ("…/GLM-5-NVFP4"), so
    the script and effective columns both fit; a wide pane and the other flags show values whole."""
    from console.servers.launch import parse_script
    from widgets.server_flags import diff_rows, flag_rows

    parsed = parse_script("sglang serve --model-path zai-org/GLM-5-NVFP4 --tp 8\n", "a.sh")
    effective = {"model": "zai-org/GLM-5-NVFP4", "tp": 8}
    wide = {label: (str(s), str(e)) for label, s, e in flag_rows(parsed, effective)}
    narrow = {label: (str(s), str(e)) for label, s, e in flag_rows(parsed, effective, short=True)}
    assert wide["model"] == ("zai-org/GLM-5-NVFP4", "zai-org/GLM-5-NVFP4")
    assert narrow["model"] == ("…/GLM-5-NVFP4", "…/GLM-5-NVFP4")
    assert narrow["tensor parallel"] == wide["tensor parallel"] == ("8", "8")
    other = parse_script("sglang serve --model-path /models/Qwen3-8B --tp 8\n", "b.sh")
    assert [str(c) for c in diff_rows(parsed, other, short=True)[0][1:]] == ["…/GLM-5-NVFP4", "…/Qwen3-8B"]


async def test_the_crash_panel_appearing_keeps_a_following_log_on_its_last_line(tmp_path):
    from console.store.crashes import CrashRecord

    _stopped_launch(tmp_path, "segv", "".join(f"line {i} ok\n" for i in range(1, 100)) + "Segmentation fault\n", 139)
    app = GpudeckApp()
    async with app.run_test(size=(100, 30)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        view = pane.query_one(LogView)

        def last_in_view() -> bool:
            return len(view.lines) == 100 and int(view.scroll_y) + view.size.height >= 100

        await wait_until(pilot, last_in_view, what="the log at its last line")
        assert view.follow
        height = view.size.height
        pane.last_crash = CrashRecord(id="c1", config="segv", cls="segfault", time="2026-01-01T10:00:00",
                                      launch="segv-1", line=100, summary="Segmentation fault", exit_status=139)
        await wait_until(pilot, lambda: view.size.height < height, what="the crash panel above the log")
        await wait_until(pilot, last_in_view, what="'Segmentation fault' still in view")
        assert view.current_line() == (100, "Segmentation fault")


async def test_the_crash_panel_says_how_sure_the_class_is_and_where_to_look(tmp_path):
    from console.store.crashes import CrashRecord

    _stopped_launch(tmp_path, "ray", "ok\n", 1)
    app = GpudeckApp()
    async with app.run_test(size=(140, 30)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        pane.last_crash = CrashRecord(
            id="c2", config="ray", cls="unknown", time="2026-01-01T10:00:00", launch="ray-1",
            summary="not sure enough to name a class", exit_status=1, evidence_kinds=("process", "structure"),
            confidence=0.4, suspicious=((5, "ray.exceptions.ActorDiedError: The actor died unexpectedly",
                                         "says something died or failed elsewhere"),))
        banner = pane.query_one("#crash")
        await wait_until(pilot, lambda: "shown" in banner.classes, what="the crash panel")
        text = str(banner.render())
        assert "confidence 0.40 · rests on: process, structure" in text
        assert "look at line 5: says something died or failed elsewhere" in text
