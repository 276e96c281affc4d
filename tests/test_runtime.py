"""Host runtimes: crashes are caught and recorded on hosts that are not on screen, with no
console open at all, once each; views of one host agree; a sweep stays on its host."""
from __future__ import annotations

import pytest
import json
import re
import shlex
import sys
import time
from pathlib import Path


from console.store import launches
from console.store.crashes import read_crashes
from console.store.suggest import offer_new
from profiles import store
from profiles.profile import profile_from_dict
from console.store.task_board import TaskBoard
from screens.app import GpudeckApp
from tests.cli import gpudeck
from tests.gpus_standin import FIXTURES as SMI_FIXTURES
from tests.gpus_standin import STANDIN
from tests.harness import wait_until
from widgets.gpu_fleet import FleetTable
from widgets.host_chips import HostChips

ROOT = Path(__file__).resolve().parent.parent
LOGS = Path(__file__).parent / "fixtures" / "logs"
BENCH = Path(__file__).parent / "fixtures" / "bench"


def _crashing_profile(tmp_path: Path, name: str = "alpha", delay_s: float = 1.0):
    """A local profile whose one config prints a real illegal-address log and exits 1."""
    scripts = tmp_path / f"{name}-scripts"
    scripts.mkdir()
    script = scripts / "crashy.sh"
    log = LOGS / "sglang-illegal-address-cascade.log"
    script.write_text(f"#!/bin/sh\nsleep {delay_s}\ncat {shlex.quote(str(log))}\nexit 1\n")
    script.chmod(0o755)
    profile = profile_from_dict(name, {"transport": "local", "server": {
        "scripts_dir": str(scripts), "log_dir": str(tmp_path / f"{name}-logs")},
        "gpu": {"smi_command": ["/nonexistent/nvidia-smi"]}})
    store.save(profile)
    return profile


def _crash_suggestions(profile: str) -> list[str]:
    return [s.key for s in TaskBoard.for_profile(profile).suggestions if s.kind == "crash"]


async def test_a_crash_on_a_host_not_on_screen_is_recorded_and_its_chip_turns_red(tmp_path):
    _crashing_profile(tmp_path, "alpha")
    app = GpudeckApp(profile_name="local")
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: "alpha" in app.fleet.runtimes, 10, "alpha's runtime")
        assert app.current == "local"
        # launched on alpha by another process (the CLI), while this console looks at local
        launched = gpudeck("server", "launch", "crashy", "-p", "alpha")
        assert launched.returncode == 0, launched.stderr
        found = []

        def recorded():
            found[:] = read_crashes("alpha").records
            return bool(found)
        await wait_until(pilot, recorded, 10, "a crash record on alpha")
        assert [c.cls for c in found] == ["cuda-illegal-address"]
        assert found[0].config == "crashy"
        await wait_until(pilot, lambda: "✖ cuda-illegal-address" in app.query_one(HostChips).line_text().plain,
                         10, "alpha's chip to show the crash")
        assert app.current == "local"
        await wait_until(pilot, lambda: _crash_suggestions("alpha") == [f"crash:{found[0].id}"], 10,
                         "one suggestion for the crash")


async def test_a_crash_with_no_console_open_is_recorded_once_by_the_next_command(tmp_path):
    _crashing_profile(tmp_path, "alpha", delay_s=0.2)
    launched = gpudeck("server", "launch", "crashy", "-p", "alpha", "--json")
    assert launched.returncode == 0, launched.stderr
    record = json.loads(launched.stdout)
    exit_file = Path(record["exit_file"])
    deadline = time.monotonic() + 30
    while not exit_file.exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert exit_file.exists(), "the wrapper never wrote the exit status"
    assert read_crashes("alpha").records == []  # nobody has looked yet

    first = gpudeck("tasks", "list", "-p", "alpha", "--json")
    assert first.returncode == 0, first.stderr
    json.loads(first.stdout)  # stdout stays one JSON document
    assert "crashy crashed (cuda-illegal-address)" in first.stderr
    second = gpudeck("bench", "--list", "--profile", "alpha", "--json")
    assert second.returncode == 0, second.stderr
    assert "crashed" not in second.stderr  # already recorded: nothing new to say

    crashes = read_crashes("alpha").records
    assert len(crashes) == 1 and crashes[0].cls == "cuda-illegal-address"
    assert launches.load_all("alpha")[0].crash_record == crashes[0].id
    # the Tasks tab's scan and another CLI path find the same crash: still one suggestion
    offer_new("alpha")
    scanned = gpudeck("tasks", "suggestions", "--scan", "-p", "alpha")
    assert scanned.returncode == 0, scanned.stderr
    assert _crash_suggestions("alpha") == [f"crash:{crashes[0].id}"]


def _busy_then_stale(tmp_path: Path) -> Path:
    busy = (SMI_FIXTURES / "ticks-busy-8x.csv").read_text().rstrip("\n")
    stale = (SMI_FIXTURES / "ticks-stale-8x.csv").read_text().split("\n", 1)[1]  # without its header
    path = tmp_path / "ticks-crash.csv"
    path.write_text(busy + "\n\n" + stale)
    return path


def _stale_in(summary: str | None) -> int:
    found = re.search(r"(\d+) STALE", summary or "")
    return int(found.group(1)) if found else 0


async def test_the_fleet_view_and_the_gpus_tab_agree_at_every_sample_across_a_crash(tmp_path):
    ticks = _busy_then_stale(tmp_path)
    store.save(profile_from_dict("box", {"transport": "local", "gpu": {
        "sample_interval_ms": 100, "smi_command": [sys.executable, str(STANDIN), "--replay", str(ticks)]}}))
    app = GpudeckApp(profile_name="box")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["gpus"]
        seen: list[tuple[int, int]] = []
        original = pane.runtime_event

        def checked(event):
            original(event)
            if getattr(event, "snapshot", None) is not None and pane.fleet_shown:
                cell = str(pane.query_one(FleetTable).get_cell("box", "stale")).strip()
                seen.append((int(cell) if cell.isdigit() else 0, _stale_in(pane._summary)))
        pane.runtime_event = checked
        await pilot.press("f")
        await wait_until(pilot, lambda: any(tab > 0 for _, tab in seen) and any(tab == 0 for _, tab in seen[1:])
                         and seen[-1][1] == 0 and len(seen) > 10, 40, "busy, stale, then busy again")
        assert all(fleet == tab for fleet, tab in seen), seen


def _replaying(path: Path, *extra: str, calls: list):
    def launcher(values, profile, tunnelled):
        calls.append(profile)
        return [sys.executable, str(BENCH / "replay.py"), str(path), *extra]
    return launcher


async def test_switching_hosts_mid_sweep_keeps_the_sweep_on_its_host():
    store.save(profile_from_dict("alpha", {"transport": "local", "gpu": {"smi_command": ["/nonexistent/x"]}}))
    local = store.load("local")
    local.server.url = "http://127.0.0.1:9"
    local.gpu.smi_command = ["/nonexistent/x"]
    store.save(local)
    app = GpudeckApp(profile_name="local")
    async with app.run_test(size=(160, 45)) as pilot:
        bench = app.panes["bench"]
        lines = (BENCH / "sweep_ok.jsonl").read_text().splitlines()
        hold = next(i for i, line in enumerate(lines) if '"level-end"' in line) + 6
        calls: list[str] = []
        bench.launcher = _replaying(BENCH / "sweep_ok.jsonl", "--hold-after", str(hold), calls=calls)
        await pilot.press("3")
        await pilot.press("r")
        # the first sweep on a host is larger than any before it: the tab asks first
        await wait_until(pilot, lambda: app.screen.__class__.__name__ == "Confirm", 10, "the larger-sweep question")
        await pilot.press("y")
        runtime = app.fleet.runtimes["local"]
        await wait_until(pilot, lambda: runtime.sweeping and bench.view.levels, 15, "the sweep to run")
        run_id = bench.view.run_id
        await app.switch_host("alpha")
        # the tab reads alpha's form and latest run off the loop, then shows alpha's view in place of local's
        await wait_until(pilot, lambda: bench.runtime.name == "alpha" and bench.view is not runtime.sweep_view, 10,
                         "the Bench tab on alpha, with alpha's view")
        assert bench.proc is None
        assert bench.view.run_id != run_id or not bench.view.running
        assert runtime.sweeping and runtime.sweep_view.run_id == run_id  # still running, on local
        assert not app.fleet.runtimes["alpha"].sweeping
        runtime.stop_sweep()
        await wait_until(pilot, lambda: not runtime.sweeping, 15, "the sweep to stop")
        assert bench.view.run_id != run_id  # alpha's tab never drew local's sweep
        await app.switch_host("local")
        await wait_until(pilot, lambda: bench.runtime.name == "local" and bench.view.run_id == run_id, 10,
                         "the Bench tab back on local, with its sweep")
        assert bench.view.exit_code == 3
        assert calls == ["local"]  # the run is saved under the host it started on


async def test_every_pane_marks_its_data_stale_while_the_host_is_unreachable(ssh_profile, sshd):
    from console.fmt import clock
    from screens.pane import StaleLine

    ssh_profile.gpu.smi_command = ["/nonexistent/nvidia-smi"]
    store.save(ssh_profile)
    app = GpudeckApp(profile_name="testbox")
    async with app.run_test(size=(160, 45)) as pilot:
        runtime = app.fleet.runtime("testbox")
        await app.fleet.ping("testbox")
        await wait_until(pilot, lambda: runtime.session.host.status.state == "connected", 20, "a connection")
        connected_at = runtime.last_good

        def stale_lines() -> list[str]:
            out = []
            for pane in app.panes.values():
                found = [w for w in pane.query(StaleLine) if w.display]
                out.append(str(found[0].render()) if found else "")
            return out
        assert stale_lines() == [""] * len(app.panes)
        sshd.stop()
        try:
            await app.fleet.ping("testbox", timeout=5)
            await wait_until(pilot, lambda: all(stale_lines()), 30, "every pane to say its data is stale")
            first = runtime.down_since
            await app.fleet.ping("testbox", timeout=5)  # a retry fails again: "down since" stays put
            # the host's status reaches the runtime at once; the panes by message, queued by now:
            # a call queued after it on each pane shows each has handled it
            handled: set[str] = set()
            for name, pane in app.panes.items():
                pane.call_later(lambda n=name: handled.add(n))
            await wait_until(pilot, lambda: handled == set(app.panes), what="every pane past the retry's status")
            assert runtime.down_since == first
            good = runtime.last_good   # the last reading before the host went down (readings go on until sshd stops)
            assert connected_at <= good <= first
            for line in stale_lines():
                assert f"testbox unreachable since {clock(first)}" in line
                assert f"last good reading, from {clock(good)}" in line
            assert f"down since {clock(first)}" in app.query_one(HostChips).line_text().plain
        finally:
            sshd.start()
        await app.fleet.ping("testbox", timeout=10)
        await wait_until(pilot, lambda: stale_lines() == [""] * len(app.panes), 30, "the stale marks to clear")


async def test_unreadable_records_are_named_once(tmp_path):
    from console.runtime import events as ev
    from profiles.paths import profile_data_dir

    data = profile_data_dir("local")
    for folder in ("crashes", "servers", "runs"):
        (data / folder).mkdir(parents=True, exist_ok=True)
        (data / folder / "broken.json").write_text("{not json")
    app = GpudeckApp(profile_name="local")
    said: list[str] = []
    original = app.notify
    app.notify = lambda message, *a, **k: (said.append(str(message)), original(message, *a, **k))[1]
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: len([s for s in said if "broken.json" in s]) == 3, 15,
                         "the three unreadable records named")
        runtime = app.fleet.runtimes["local"]
        saved: list[str] = []
        runtime.subscribe(lambda event: saved.append(event.run_id) if isinstance(event, ev.RunSaved) else None)
        (data / "runs" / "new.json").write_text(json.dumps({"levels": []}))  # the watcher looks again
        await pilot.press("2")  # and the Server tab shows the launch records
        await wait_until(pilot, lambda: "new" in saved, 15, "the watcher's next look (it finds the new run)")
        server = app.panes["server"]
        await wait_until(pilot, lambda: "loading configs" not in str(server.query_one("#loghead").render()), 15,
                         "the Server tab's records read")
        # what that look found reaches the app as a notice; the same three, not named again
        handled = []
        app.call_later(lambda: handled.append(True))
        await wait_until(pilot, lambda: handled, what="the app past the look's events")
        named = sorted(s for s in said if "broken.json" in s)
        assert len(named) == 3, named
        assert [("unreadable run" in s, "unreadable crash record" in s, "unreadable launch record" in s)
                for s in named].count((False, False, False)) == 0


@pytest.mark.slow
async def test_a_crashed_configs_logged_flags_survive_a_host_switch_and_a_restart(tmp_path):
    from screens.confirm import Confirm

    _crashing_profile(tmp_path, "alpha", delay_s=0.5)
    app = GpudeckApp(profile_name="alpha")
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: [c.name for c in pane.configs] == ["crashy"], 15, "the config")
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 15, "the launch confirmation")
        await pilot.press("y")
        await wait_until(pilot, lambda: pane.last_crash is not None, 20, "the crash")
        await wait_until(pilot, lambda: pane._effective_flags("crashy") is not None, 5, "the logged flags")
        logged = pane._effective_flags("crashy")
        await app.switch_host("local")
        await app.switch_host("alpha")
        await wait_until(pilot, lambda: [c.name for c in pane.configs] == ["crashy"], 15, "the config again")
        await wait_until(pilot, lambda: pane.last_crash is not None, 10, "the crash again")
        assert pane._effective_flags("crashy") == logged
        assert pane.last_crash.cls == "cuda-illegal-address"
    app = GpudeckApp(profile_name="alpha")  # a restarted console: no monitor saw this launch
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: [c.name for c in pane.configs] == ["crashy"], 15, "the config")
        assert pane._effective_flags("crashy") == logged


async def test_the_latency_after_a_reconnect_is_the_links_not_the_outages(ssh_profile, sshd):
    from console.runtime.fleet import Fleet

    fleet = Fleet([ssh_profile])
    host = fleet.hosts["testbox"]
    try:
        await fleet.ping("testbox")
        assert host.status.state == "connected"
        sshd.stop()
        await fleet.ping("testbox", timeout=5)
        assert host.status.state == "down"
        sshd.start()
        reconnect_started = time.monotonic()
        await fleet.ping("testbox", timeout=20)
        whole_ms = (time.monotonic() - reconnect_started) * 1000
        assert host.status.state == "connected"
        # the chip's figure is one round trip on the open link, not the reconnect (which includes it)
        assert host.status.latency_ms is not None and host.status.latency_ms < whole_ms
    finally:
        await fleet.close()


def test_a_command_still_answers_when_the_host_of_a_live_launch_is_down():
    from console.store.launches import LaunchRecord
    from tests.realparts import free_port

    store.save(profile_from_dict("deadbox", {"transport": "ssh", "ssh": {
        "host": "127.0.0.1", "port": free_port(), "connect_timeout_s": 2}}))
    launches.save("deadbox", LaunchRecord(id="l1", config="c", script="/x.sh", log="/x.log", exit_file="/x.exit",
                                         pid=4242, pgid=4242, state="ready"))
    done = gpudeck("tasks", "list", "-p", "deadbox", "--json")
    assert done.returncode == 0, done.stderr
    assert isinstance(json.loads(done.stdout), dict)
    assert launches.load_all("deadbox")[0].state == "ready"  # unknown is left as it was, never guessed
