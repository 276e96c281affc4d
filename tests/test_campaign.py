"""Campaigns: an unattended run over launch configs, with a real llama.cpp server launched per cell."""
from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from console.campaign.grid import GridError, derive
from console.campaign.spec import CampaignError, from_dict, load
from tests.cli import gpudeck
from tests.harness import poll_until
from tests.realparts import free_port, llama_server_binary, smollm_model

SCRIPTS = Path(__file__).parent / "fixtures" / "scripts"


# ---------------------------------------------------------------- the file


def test_a_bad_campaign_file_names_the_file_and_key(tmp_path):
    bad = tmp_path / "c.toml"
    bad.write_text('[sweep]\nlevels = [1, 0]\n[[config]]\nname = "a"\n')
    with pytest.raises(CampaignError, match=r"c.toml: key 'sweep.levels': expected a positive whole number"):
        load(bad)
    bad.write_text("[sweep\n")
    with pytest.raises(CampaignError, match="not valid TOML"):
        load(bad)
    with pytest.raises(CampaignError, match="policy.on_crash"):
        from_dict({"sweep": {"levels": [1]}, "config": [{"name": "a"}], "policy": {"on_crash": "explode"}})
    with pytest.raises(CampaignError, match="at least one"):
        from_dict({"sweep": {"levels": [1]}})
    with pytest.raises(CampaignError, match="flag names written as on the command line"):
        from_dict({"sweep": {"levels": [1]}, "grid": [{"base": "a", "flags": {"max-bs": [1]}}]})


def test_the_file_round_trips_through_the_saved_state():
    doc = {"sweep": {"levels": [1, 4], "slo": {"ttft_ms": 500}},
           "config": [{"name": "a"}], "grid": [{"base": "a", "flags": {"--cuda-graph-max-bs": [16, 32]}}],
           "policy": {"on_crash": "retry"}}
    spec = from_dict(doc)
    again = from_dict(spec.to_json())
    assert again.to_json() == spec.to_json()
    assert [g.combinations() for g in again.grids] == [[{"--cuda-graph-max-bs": 16}, {"--cuda-graph-max-bs": 32}]]


# ---------------------------------------------------------------- derived scripts


def _changed_lines(before: str, after: str) -> list[tuple[str, str]]:
    return [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]


def test_a_grid_changes_exactly_the_named_flags():
    base = (SCRIPTS / "launch EP8 memsafe (dsv3).sh").read_text()
    out = derive(base, {"--cuda-graph-max-bs": 32})
    changed = _changed_lines(base, out)
    assert changed == [("    --cuda-graph-max-bs 256 \\", "    --cuda-graph-max-bs 32 \\")]
    assert len(out.splitlines()) == len(base.splitlines())


def test_a_flag_the_script_lacks_is_added_to_the_server_command_not_its_comment():
    base = (SCRIPTS / "launch EP8 real.sh").read_text()
    out = derive(base, {"--cuda-graph-max-bs": 64, "--max-running-requests": 256})
    from console.servers.launch import parse_script

    parsed = parse_script(out)
    assert parsed.raw_flags["cuda-graph-max-bs"] == "64" and parsed.raw_flags["max-running-requests"] == "256"
    assert "# graphs off while debugging" in out.splitlines()[-1]
    assert out.splitlines()[-1].index("--cuda-graph-max-bs") < out.splitlines()[-1].index("#")


def test_a_script_with_no_server_command_is_refused():
    with pytest.raises(GridError, match="no sglang"):
        derive((SCRIPTS / "not-a-server.sh").read_text(), {"--x": 1})


# ---------------------------------------------------------------- real runs


@pytest.fixture
def llama_box(tmp_path):
    """A local profile whose one launch config runs the real llama.cpp server."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    port = free_port()
    (scripts / "smol.sh").write_text(
        "#!/bin/sh\n"
        f"exec {shlex.quote(str(llama_server_binary()))} -m {shlex.quote(str(smollm_model()))} "
        f"--host 127.0.0.1 --port {port} -c 1024 -t 1 --parallel 1\n")
    (scripts / "smol.sh").chmod(0o755)
    assert gpudeck("profiles", "add", "box", "--local", "--scripts-dir", str(scripts),
                   "--log-dir", str(tmp_path / "logs"), timeout=240).returncode == 0
    yield tmp_path, scripts, port
    _kill_launched("box")


def _kill_launched(profile: str) -> None:
    from console.store import launches

    for record in launches.load_all(profile):
        if record.pgid:
            try:
                os.killpg(record.pgid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass


def _campaign_file(folder: Path, policy: str = "", levels: str = "[1, 2]", prompts: int = 4) -> Path:
    """One repeat: these tests are about launching, stopping and resuming, not about the noise."""
    path = folder / "campaign.toml"
    path.write_text(f"[sweep]\nlevels = {levels}\ninput_len = 16\noutput_len = 8\nnum_prompts = {prompts}\n"
                    "repeats = 1\n\n"
                    '[[grid]]\nbase = "smol"\nflags = { "--parallel" = [1, 2] }\n\n'
                    f"[policy]\nready_timeout_s = 90\ngpu_idle_timeout_s = 5\n{policy}")
    return path


def _group_alive(pgid: int) -> bool:
    """Any process of the group that is not a zombie (this machine's pid 1 may never reap orphans)."""
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


def _nothing_left_running(profile: str) -> None:
    from console.store import launches

    for record in launches.load_all(profile):
        assert not record.live, f"{record.config} still {record.state}"
        if record.pgid:
            assert not _group_alive(record.pgid), f"{record.config}: process group {record.pgid} still runs"


def test_a_campaign_over_two_real_configs_launches_sweeps_stops_and_compares(llama_box):
    folder, _scripts, _port = llama_box
    out = gpudeck("campaign", "run", str(_campaign_file(folder)), "-p", "box", "--foreground", "--json", timeout=240)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    assert doc["status"] == "finished"
    assert [c["name"] for c in doc["cells"]] == ["smol+parallel=1", "smol+parallel=2"]
    for cell in doc["cells"]:
        assert cell["status"] == "done", cell
        assert [lv["concurrency"] for lv in cell["levels"]] == [1, 2]
        assert all(lv["status"] == "ok" and lv["output_throughput"] > 0 for lv in cell["levels"])
        assert cell["run_id"]
        derived = Path(os.environ["GPUDECK_HOME"]) / "data" / "profiles" / "box" / "campaigns" / doc["id"] / \
            "scripts" / f"{cell['name']}.sh"
        assert f"--parallel {cell['flags']['--parallel']}" in derived.read_text()
    assert doc["comparison"]["leader"] in ("smol+parallel=1", "smol+parallel=2")
    assert all(c["rounds"][0]["levels"][0]["samples"]["ttft_ms"] for c in doc["cells"])   # kept for the CIs
    _nothing_left_running("box")
    shown = gpudeck("campaign", "show", doc["id"], "-p", "box", timeout=240)
    assert doc["comparison"]["verdict"] in shown.stdout and "smol+parallel=2" in shown.stdout
    report = folder / "findings.md"
    assert gpudeck("report", "-p", "box", "--offline", "--out", str(report), timeout=240).returncode == 0
    text = report.read_text()
    assert "## Campaigns" in text and doc["id"] in text
    assert "| smol+parallel=2 | smol | --parallel 2 | done |" in text
    picture = folder / f"{doc['id']}-frontier.svg"          # the frontier, beside the report
    assert picture.read_text().startswith("<svg") and f"]({picture.name})" in text


def test_resume_after_kill_9_keeps_finished_cells_and_redoes_the_interrupted_one(llama_box):
    from console.store import campaigns as st

    folder, _scripts, _port = llama_box
    started = gpudeck("campaign", "run", str(_campaign_file(folder, levels="[1, 2]", prompts=6)), "-p", "box",
                      "--json", timeout=240)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)
    cid = info["id"]

    def second_cell_sweeping() -> bool:
        try:
            s = st.load("box", cid)
        except ValueError:
            return False
        return s.cells[0].status == "done" and s.cells[1].status == "sweeping" and bool(s.cells[1].run_id)
    poll_until(second_cell_sweeping, 120, what="the second cell to sweep")
    os.kill(info["driver_pid"], signal.SIGKILL)
    killed = st.load("box", cid)
    first_run, cut_run = killed.cells[0].run_id, killed.cells[1].run_id
    assert killed.cells[1].status == "sweeping" and cut_run
    shown = json.loads(gpudeck("campaign", "show", cid, "-p", "box", "--json", timeout=240).stdout)
    assert shown["driver_running"] is False

    resumed = gpudeck("campaign", "resume", cid, "-p", "box", "--foreground", "--json", timeout=240)
    assert resumed.returncode == 0, resumed.stderr[-2000:]
    doc = json.loads(resumed.stdout)
    first, second = doc["cells"]
    assert first["status"] == "done" and first["attempts"] == 1 and first["run_id"] == first_run
    assert second["status"] == "done" and second["attempts"] == 2
    assert "redone after an interruption" in second["note"] and second["run_id"] != cut_run
    # the run the kill cut short says so, apart from the redo, instead of `running` forever
    listed = gpudeck("bench", "--list", "--profile", "box", timeout=240).stdout
    assert any(line.startswith(cut_run) and "interrupted" in line for line in listed.splitlines()), listed
    _nothing_left_running("box")


def test_two_campaigns_never_drive_one_host(llama_box):
    from console.campaign import lock

    folder, _scripts, _port = llama_box
    lock.acquire(lock.local_identity(), None, "campaign-someone-else", "box", pid=os.getpid())
    try:
        out = gpudeck("campaign", "run", str(_campaign_file(folder)), "-p", "box", "--foreground", timeout=240)
        assert out.returncode == 1
        assert f"driven by campaign campaign-someone-else of profile box (pid {os.getpid()}" in out.stderr
    finally:
        lock.release(lock.local_identity(), None, "campaign-someone-else", pid=os.getpid())


def test_gpu_memory_not_freed_stops_the_campaign_before_the_next_config(llama_box, tmp_path):
    """The GPUs stay busy after a stop (a stray holder): the next config must not start on them."""
    from console.sim.hardware import find_gpu
    from console.sim.state import gpu_rows, write_state
    from profiles import store

    folder, _scripts, _port = llama_box
    stray = subprocess.Popen(["sleep", "300"])
    try:
        rows = gpu_rows(find_gpu("H100"), 2)
        for r in rows:
            r.update(memory_used_mib=70000, utilization_gpu=40)
        state_dir = tmp_path / "gpus"
        write_state(state_dir, {"pid": stray.pid, "status": "ready", "gpus": rows,
                                "processes": [{"pid": stray.pid, "gpu_index": 0, "gpu_uuid": rows[0]["uuid"],
                                               "used_memory_mib": 70000, "process_name": "stray"}]})
        profile = store.load("box")
        profile.gpu.smi_command = [sys.executable, "-m", "console", "sim", "nvidia-smi", "--state-dir", str(state_dir)]
        store.save(profile)
        out = gpudeck("campaign", "run", str(_campaign_file(folder, levels="[1]")), "-p", "box", "--foreground",
                      "--json", timeout=240)
        doc = json.loads(out.stdout)
        assert out.returncode == 1 and doc["status"] == "failed"
        assert "did not return to idle" in doc["note"] and "next config would start on busy GPUs" in doc["note"]
        assert doc["cells"][0]["status"] == "done" and doc["cells"][1]["status"] == "queued"
        _nothing_left_running("box")
    finally:
        stray.kill()


@pytest.mark.timeout(920)
@pytest.mark.slow
def test_the_simulated_campaign_triages_a_crash_goes_on_and_names_the_winner(tmp_path, monkeypatch):
    """The demo's own campaign: one config dies at 256 streams; the rest still run; the table says why."""
    from console import demo

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_SIM_EFFICIENCY", "0.3")   # the same story, ten times faster
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    # the shipped campaign, cut to what tells its story in two repeats: at 64 streams only CUDA graphs up to 64
    # avoid eager steps; 256 streams crash one config and (three times faster than the demo) miss the TTFT SLO
    shipped = demo.DEMO_CAMPAIGN
    for part in ("levels = [1, 10, 64, 256]", "output_len = 8", "slo = { ttft_ms = 8000 }", "repeats = 2",
                 "precision = 0.10", "max_repeats = 5"):
        assert part in shipped
    campaign = tmp_path / "campaign.toml"   # two repeats exactly: repeating until sure has tests of its own
    campaign.write_text("\n".join(line for line in shipped.replace("levels = [1, 10, 64, 256]", "levels = [64, 256]")
                                   .replace("output_len = 8", "output_len = 16")
                                   .replace("slo = { ttft_ms = 8000 }", "slo = { ttft_ms = 1300 }").splitlines()
                                   if not line.startswith(("precision", "max_repeats"))))
    try:
        # a guard against a hang, not a speed goal: 10 visits take 4-7 minutes on a loaded 2-core machine
        out = gpudeck("campaign", "run", str(campaign), "-p", "demo", "--foreground", "--json", timeout=900)
        assert out.returncode == 0, out.stderr[-3000:]
        doc = json.loads(out.stdout)
        cells = {c["name"]: c for c in doc["cells"]}
        assert list(cells) == ["run_tp8_cds16", "run_tp8_ep8_memsafe", "run_tp8_ep8_crash",
                               "run_tp8_cds16+cuda-graph-max-bs=32", "run_tp8_cds16+cuda-graph-max-bs=64"]
        crashed = cells["run_tp8_ep8_crash"]
        assert crashed["status"] == "crashed" and crashed["crash_class"] == "cuda-illegal-address"
        assert crashed["crash_record"]
        assert [lv["status"] for lv in crashed["levels"]][-1] == "failed"
        # the levels it finished before the crash keep their per-request samples: its one repeat still has a CI
        assert crashed["levels"][0]["status"] == "ok" and crashed["levels"][0]["samples"]["tokens"]
        after = cells["run_tp8_cds16+cuda-graph-max-bs=64"]       # the campaign went on after the crash
        assert after["status"] == "done" and len(after["rounds"]) == 2
        assert all(lv["status"] == "ok" for r in after["rounds"] for lv in r["levels"])
        comp = doc["comparison"]
        # at 64 streams only the config with CUDA graphs up to 64 avoids eager steps: it wins beyond the noise
        assert comp["winner"] == "run_tp8_cds16+cuda-graph-max-bs=64" and comp["leader_level"] == 64, comp["verdict"]
        assert comp["difference"]["ci"][0] >= comp["min_effect_pct"]
        row = next(r for r in comp["results"] if r["cell"] == "run_tp8_ep8_crash")
        assert row["crashed_at"] == 256 and "run_tp8_ep8_crash" not in comp["tied"]
        table = gpudeck("campaign", "show", doc["id"], "-p", "demo", timeout=240).stdout
        assert "crashed at c=256: cuda-illegal-address" in table and f"winner: {comp['winner']}" in table
        best = next(r for r in comp["results"] if r["cell"] == comp["winner"])
        assert best["efficiency_pct"] is not None and 0 < best["efficiency_pct"] < 100
        assert best["efficiency_deciding_pct"] is not None and "(deciding level)" in table
        # a fit is shown only where it meets its own levels (a line missing them is "no fit"): with two
        # levels, one of them queueing at 256 streams, either may be right; never a fit the table hides
        assert best["calibration"] is None or "against the roofline" in table
        assert best["calibration"] is not None or best["calibration_refused"] in table   # "no fit", and why
        suggestions = json.loads(gpudeck("tasks", "-p", "demo", "suggestions", "--json", timeout=240).stdout)["suggestions"]
        keys = [s["key"] for s in suggestions]
        assert not any(k.startswith("efficiency:") for k in keys)  # the table judges the cells, not a task per run
        assert "promise:run_tp8_ep8_crash" in keys and "promise:run_tp8_ep8_memsafe" in keys
        _nothing_left_running("demo")
    finally:
        world.close()


def test_quitting_the_demo_stops_its_running_campaign_and_servers(tmp_path, monkeypatch):
    from console import demo
    from console.campaign import control
    from console.pids import pid_alive
    from console.store import launches

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    try:
        state = control.create("demo")
        pid = control.spawn(state)
        poll_until(lambda: any(r.live and r.pgid for r in launches.load_all("demo")), 120, what="the first launch")
        pgids = [r.pgid for r in launches.load_all("demo") if r.pgid]
        assert pgids
    finally:
        world.close()
    poll_until(lambda: not pid_alive(pid), 10, what="the driver to die")
    for pgid in pgids:
        poll_until(lambda: not _group_alive(pgid), 10, what=f"process group {pgid} to end")


def test_quitting_the_demo_ends_a_launch_caught_before_its_pgid_was_saved(tmp_path, monkeypatch):
    """A driver killed between a launch's first save and its pgid leaves a record with no group;
    the demo still ends the launch's server: it carries the launch's mark and the world's permit
    in its environment, which is what proves it the world's (a pgid file is never taken on trust)."""
    from console import demo
    from console.store import launches

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    server = subprocess.Popen(["sleep", "300"], start_new_session=True,
                              env={**os.environ, "GPUDECK_LAUNCH_ID": "run_tp8_cds16-1"})
    stranger = subprocess.Popen(["sleep", "300"], start_new_session=True)   # not the world's
    elsewhere = subprocess.Popen(["sleep", "300"], start_new_session=True,    # another world's launch
                                 env={**os.environ, "GPUDECK_LAUNCH_ID": "run_tp8_cds16-1",
                                      "GPUDECK_LAUNCH_PERMIT": str(tmp_path / "other" / "launch-permit")})
    exit_file = tmp_path / "demo" / "logs" / "run_tp8_cds16-1.log.exit"
    try:
        launches.save("demo", launches.LaunchRecord(id="run_tp8_cds16-1", config="run_tp8_cds16", script=None,
                                                  log=None, exit_file=str(exit_file)))
        assert launches.load_all("demo")[0].pgid is None
        Path(f"{exit_file}.pgid").write_text(f"{stranger.pid}\n")   # a file names it: no proof
        world.stop()
        assert server.wait(timeout=10) == -signal.SIGKILL
        assert stranger.poll() is None and elsewhere.poll() is None
    finally:
        for proc in (server, stranger, elsewhere):
            if proc.poll() is None:
                proc.kill()
            proc.wait()
        world.close()


def test_single_measurements_without_samples_name_no_winner_however_far_apart():
    """24.52 against 24.51 tok/s, or 31.5 against 10: one number per config and no requests kept
    says nothing about the noise, so no margin names a winner (the old 1% rule named one here)."""
    from console.store import campaigns as st
    from console.campaign.compare import compare, table_lines

    def campaign(*tps: float):
        def level(x):
            return {"concurrency": 10, "status": "ok", "output_throughput": x, "ttft_p99": 900.0}

        cells = [st.Cell(name=name, base=name, status="done", levels=[level(x)]) for name, x in zip("abcd", tps)]
        return st.CampaignState(id="c1", profile="box", spec={"sweep": {"levels": [10], "slo": {"ttft_ms": 8000}}},
                                cells=cells, status="finished")

    close = compare(campaign(24.52, 24.51))
    assert close.tie and close.to_json()["tie"] is True and close.tied == ["a", "b"] and close.winner is None
    line = table_lines(campaign(24.52, 24.51))[-1]
    assert line.startswith("no significant difference between a and b (+0.0%, no interval") and "winner" not in line
    far = compare(campaign(31.5, 10.0))
    assert far.winner is None and far.margin_pct == 215.0
    assert "".join(far.verdict()).startswith("no significant difference between a and b (+215.0%")


def test_a_level_that_measured_nothing_never_wins():
    """A campaign ranks levels by the store's one rule (LevelResult.measured_tok_s), as the report
    and the Roofline tab do: an `ok` level at 0 tok/s measured nothing, so it is no winner at 0.00."""
    from console.store import campaigns as st
    from console.campaign.compare import compare

    cells = [st.Cell(name="a", base="a", status="done",
                     levels=[{"concurrency": 1, "status": "ok", "output_throughput": 0.0}]),
             st.Cell(name="b", base="b", status="done",
                     levels=[{"concurrency": 1, "status": "partial", "output_throughput": 7.0}])]
    comp = compare(st.CampaignState(id="c1", profile="box", spec={"sweep": {"levels": [1]}}, cells=cells))
    assert comp.winner is None and [r.best_tps for r in comp.results] == [None, None]
    assert comp.verdict()[0] == "no winner yet"


async def test_the_campaign_tab_counts_the_finished_cells_campaign_list_counts(tmp_path):
    """A cell the operator's stop cut short has ended: the tab says 3/3 as `campaign list` does."""
    from console.store import campaigns as st
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict
    from screens.campaign_pane import CampaignPane
    from tests.harness import HostApp, wait_until

    store.save(profile_from_dict("box", {"transport": "local"}))
    spec = from_dict({"sweep": {"levels": [1]}, "config": [{"name": "a"}, {"name": "b"}, {"name": "c"}]})
    state = st.CampaignState(id=st.new_id("box"), profile="box", spec=spec.to_json(), cells=[
        st.Cell(name="a", base="a", status="done"), st.Cell(name="b", base="b", status="crashed"),
        st.Cell(name="c", base="c", status="interrupted")], status="stopped", driver_pid=None)
    st.save(state)
    listed = json.loads(gpudeck("campaign", "list", "-p", "box", "--json", timeout=240).stdout)["campaigns"]
    assert [(c["done"], c["cells"]) for c in listed] == [(3, 3)]

    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_until(pilot, lambda: app.pane.state is not None, 5, "the saved campaign")
        assert "3/3 cells" in str(app.pane.query_one("#camp-title").render())


async def test_the_campaign_tab_shows_cells_levels_crash_and_winner(tmp_path):
    """The tab renders a saved campaign: every cell, its levels, the crash class, the winner, and no driver."""
    from textual.app import App

    from console.store import campaigns as st
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict
    from screens.campaign_pane import CampaignPane
    from tests.harness import wait_until
    from widgets.campaign_grid import CampaignGrid

    store.save(profile_from_dict("box", {"transport": "local"}))
    spec = from_dict({"sweep": {"levels": [1, 4]}, "config": [{"name": "a"}, {"name": "b"}]})
    ok = [{"concurrency": 1, "status": "ok", "output_throughput": 10.0},
          {"concurrency": 4, "status": "ok", "output_throughput": 31.5}]
    state = st.CampaignState(id=st.new_id("box"), profile="box", spec=spec.to_json(), cells=[
        st.Cell(name="a", base="a", status="done", levels=ok, started_at=1.0, ended_at=5.0),
        st.Cell(name="b", base="b", status="crashed", crash_class="cuda-illegal-address",
                levels=[ok[0], {"concurrency": 4, "status": "failed", "output_throughput": None}])],
        status="running", driver_pid=None)
    st.save(state)

    class Host(App):
        def compose(self):
            yield CampaignPane(id="pane")

    app = Host()
    async with app.run_test(size=(160, 30)) as pilot:
        pane = app.query_one(CampaignPane)
        await pane.set_session(HostSession.open(store.load("box")))
        grid = pane.query_one(CampaignGrid)
        await wait_until(pilot, lambda: pane.state is not None and grid.row_count == 2 and pane.answered(),
                         what="the campaign and its answer drawn")
        assert grid.row_count == 2 and grid.levels == [1, 4]
        row_b = [str(c) for c in grid.get_row("b")]
        assert "cuda-illegal-address" in row_b[1] and row_b[3].startswith("✖")
        result = str(pane.query_one("#camp-result").render())
        # still running, one number per level and no samples: no winner, and b (crashed at c=4) is compared at c=1
        assert "so far, no significant difference between a and b" in result and "winner" not in result
        assert "31.50 vs 10.00 tok/s" in result
        assert "crashed at c=4" in str(grid.get_row("b")[-1])
        title = str(pane.query_one("#camp-title").render())
        assert "driver is gone" in title          # running on disk, but no live driver: say so


async def test_a_stop_by_another_process_is_not_a_crash_to_a_console_watching(tmp_path):
    """A campaign (its own process) stops a server a console's monitor also follows:
    the console must read the stop from disk, not record a crash."""
    import copy

    from console.servers import lifecycle
    from console.store import launches
    from console.servers.monitor import ServerMonitor
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "sleepy.sh").write_text("#!/bin/sh\nexec sleep 60\n")
    (scripts / "sleepy.sh").chmod(0o755)
    profile = profile_from_dict("box2", {"transport": "local", "server": {
        "scripts_dir": str(scripts), "log_dir": str(tmp_path / "logs"), "kill_grace_s": 5.0}})
    store.save(profile)
    session = HostSession.open(profile)
    record = await lifecycle.launch(session, "sleepy", str(scripts / "sleepy.sh"))
    watched = copy.deepcopy(record)            # the console's own copy, as its monitor holds it
    crashes: list[dict] = []
    class Watching(ServerMonitor):
        """The monitor, saying when it has looked at the process once: it is watching."""

        looked = asyncio.Event()

        async def _poll(self) -> None:
            await super()._poll()
            self.looked.set()

    monitor = Watching(session, watched, on_crash=crashes.append, poll_s=0.2)
    task = asyncio.create_task(monitor.run())
    await asyncio.wait_for(monitor.looked.wait(), 30)
    await lifecycle.stop(HostSession.open(profile), record)   # the campaign's stop, with its own copy
    await asyncio.wait_for(task, 20)
    assert watched.state == "stopped" and crashes == []
    assert launches.get("box2", record.id).crash_record is None
