"""Campaign files, campaign state and the campaign driver are hostile input too.

Each test plays one attack from the third safety pass: shell code in a grid
flag name, paths that climb out of the campaign folder, a forged id or
driver pid in state.json, a grid value inside a heredoc, a grid of a million
cells, a state file that is not what gpudeck writes, two profiles on one
host, a full disk mid-campaign, odd files where a campaign file should be.
Nothing here needs a real server: the CLI runs in-process, the driver's
place is taken by plain processes, and the full-disk run launches `sleep`.
"""
from __future__ import annotations

import json
import os
import re
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from console import limits
from console.campaign import driver, lock, owner
from console.store import campaigns as st
from console.campaign.grid import GridError, derive
from console.campaign.spec import CampaignError, from_dict, load
from profiles import paths, store
from profiles.atomic import private_dirs
from profiles.profile import profile_from_dict
from tests.cli import gpudeck, gpudeck_here
from tests.hostile_text import LINE, unsafe_chars
from tests.realparts import free_port

SWEEP = {"levels": [1]}


@pytest.fixture
def box(tmp_path):
    """A local profile with one llama.cpp launch config (never started by these tests)."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "smol.sh").write_text("#!/bin/sh\nexec llama-server -m /nonexistent.gguf --port 1 --parallel 1\n")
    (scripts / "smol.sh").chmod(0o755)
    store.save(profile_from_dict("box", {"transport": "local", "server": {
        "scripts_dir": str(scripts), "log_dir": str(tmp_path / "logs")}}))
    return tmp_path


def _campaigns(profile: str = "box") -> list[str]:
    base = st.campaigns_dir(profile)
    return sorted(p.name for p in base.iterdir() if p.is_dir()) if base.is_dir() else []


def _saved(profile: str, cells: list[st.Cell] | None = None, **fields) -> st.CampaignState:
    spec = from_dict({"sweep": {"levels": [1, 4]}, "config": [{"name": "a"}]})
    state = st.CampaignState(id=st.new_id(profile), profile=profile, spec=spec.to_json(),
                             cells=cells or [st.Cell(name="a", base="a", status="done")], **fields)
    st.save(state)
    return state


def _one_line(err: str) -> None:
    assert "Traceback" not in err, err
    assert len(err.strip().splitlines()) == 1, err


# ---------------------------------------------------------------- 1. shell code through a grid flag name

@pytest.mark.parametrize("flag", ["--x$(touch${IFS}MARK)", "--x`touch${IFS}MARK`", "--x;touch${IFS}MARK",
                                  "--x/../../../../MARK", "--X", "--x=1", "--x..y", "--_x", "--x\u202e"])
def test_a_flag_name_outside_the_server_grammar_is_refused_naming_it(flag):
    with pytest.raises(CampaignError, match=r"grid\[0\]\.flags': expected flag names") as info:
        from_dict({"sweep": SWEEP, "grid": [{"base": "a", "flags": {flag: [1]}}]})
    assert repr(flag) in str(info.value)


def test_known_and_dotted_flag_names_are_kept():
    spec = from_dict({"sweep": SWEEP, "grid": [{"base": "a", "flags": {
        "-np": [1], "--ctx-size": [512], "--speculative-config.num-steps": [2], "--cuda-graph-max-bs": [8]}}]})
    assert list(spec.grids[0].flags) == ["-np", "--ctx-size", "--speculative-config.num-steps", "--cuda-graph-max-bs"]


@pytest.mark.parametrize("quote", ["$(touch${IFS}%s)", "`touch${IFS}%s`"])
def test_campaign_run_refuses_shell_code_in_a_flag_name_and_nothing_runs(box, capsys, monkeypatch, quote):
    marker = box / "pwned"
    flag = "--x" + quote % marker
    path = box / "c.toml"
    path.write_text(f'[sweep]\nlevels = [1]\n[[grid]]\nbase = "smol"\nflags = {{ {json.dumps(flag)} = [1] }}\n')
    code, out, err = gpudeck_here("campaign", "run", str(path), "-p", "box")
    assert code == 2 and flag in err, err
    _one_line(err)
    assert _campaigns() == [] and not marker.exists()


def test_derive_refuses_a_flag_name_that_is_not_a_server_flag():
    """The state file is read back by the driver: a name slipped into it is checked again at the script."""
    with pytest.raises(GridError, match="refused flag name"):
        derive("llama-server -m /m --port 1\n", {"--x$(touch${IFS}/tmp/pwned)": 1})


# ---------------------------------------------------------------- 2. nothing written or chmod-ed outside

@pytest.mark.parametrize("base", ["/home/op/scripts/run.sh", "../run", "..", "a/b", "run\n", ""])
def test_a_grid_base_or_config_that_is_a_path_is_refused(base):
    with pytest.raises(CampaignError, match=r"grid\[0\]\.base"):
        from_dict({"sweep": SWEEP, "grid": [{"base": base, "flags": {"--parallel": [1]}}]})
    with pytest.raises(CampaignError, match=r"config\[0\]\.name"):
        from_dict({"sweep": SWEEP, "config": [{"name": base}]})


@pytest.mark.parametrize("name", ["../../../../tmp/victim/owned", "/etc/passwd", "..", ".hidden", "a/b\x00c",
                                  "x" * 400, "-delete", "run_tp8+x=$(touch a)"])
def test_a_cell_name_becomes_a_file_inside_the_scripts_folder(name):
    state = st.CampaignState(id=st.new_id("box"), profile="box", spec={}, cells=[])
    path = st.script_file(state, name)
    folder = state.dir / "scripts"
    assert path.parent == folder and "/" not in path.name and not path.name.startswith(".")
    assert len(path.name) <= 160


def test_private_dirs_never_chmods_a_folder_it_reaches_through_dotdot(tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir(mode=0o755)
    os.chmod(victim, 0o755)
    climb = Path(*[".."] * len(paths.data_dir().relative_to("/").parts))
    with pytest.raises(ValueError, match=r"'\.\.'"):
        private_dirs(paths.data_dir() / climb / str(victim).lstrip("/") / "owned")
    assert stat.S_IMODE(victim.stat().st_mode) == 0o755
    assert not (victim / "owned").exists()


def test_private_dirs_never_chmods_a_folder_behind_a_link(tmp_path):
    outside = tmp_path / "outside"
    outside.mkdir()
    os.chmod(outside, 0o755)
    paths.data_dir().mkdir(parents=True, exist_ok=True)
    (paths.data_dir() / "link").symlink_to(outside)
    private_dirs(paths.data_dir() / "link" / "sub")
    assert stat.S_IMODE(outside.stat().st_mode) == 0o755


# ---------------------------------------------------------------- 3. ids from files and the command line

@pytest.mark.parametrize("bad", ["../../../../open/esc", "/tmp/x", "..", "a/b", "-rf", "x\ny", ""])
def test_a_campaign_id_that_is_not_an_id_is_refused(bad):
    with pytest.raises(st.StateRefused, match="bad campaign id"):
        st.campaign_dir("box", bad)


def test_show_refuses_an_id_that_climbs_out_of_the_campaigns_folder(box, capsys, monkeypatch):
    target = st.campaigns_dir("box") / "../../../../open/esc"
    target.mkdir(parents=True)
    (target / "state.json").write_text(json.dumps({"id": "../../../../open/esc", "profile": "box", "spec": {},
                                                   "cells": [], "note": "READ FROM OUTSIDE"}))
    code, out, err = gpudeck_here("campaign", "show", "../../../../open/esc", "-p", "box")
    assert code != 0 and "bad campaign id" in err and "READ FROM OUTSIDE" not in out
    _one_line(err)


def test_resume_refuses_a_state_whose_id_is_a_path(box, capsys, monkeypatch):
    state = _saved("box", status="stopped")
    doc = json.loads((state.dir / "state.json").read_text())
    doc["id"] = "../../../../open/esc"
    (state.dir / "state.json").write_text(json.dumps(doc))
    escaped = (st.campaigns_dir("box") / "../../../../open").resolve()
    code, out, err = gpudeck_here("campaign", "resume", state.id, "-p", "box")
    assert code != 0 and "is not its folder's name" in err, err
    _one_line(err)
    assert not escaped.exists()


# ---------------------------------------------------------------- 4. grid values the shell reads twice

HEREDOC = "#!/bin/sh\nbash <<EOF\nllama-server -m /m.gguf --port 8080 --parallel 1\nEOF\n"


@pytest.mark.parametrize("base", [HEREDOC, HEREDOC.replace("<<EOF", "<<-EOF"),
                                  "#!/bin/sh\nP=1\neval llama-server -m /m.gguf --port 8080 --parallel $P\n",
                                  "#!/bin/sh\nexec 3<<EOF\nx\nEOF\nbash <<EOF\n  llama-server -m /m.gguf \\\n"
                                  "    --port 8080 --parallel 1\nEOF\n"])
def test_a_value_the_shell_would_read_twice_is_refused_saying_why(base):
    with pytest.raises(GridError, match="reads it twice"):
        derive(base, {"--parallel": "$(touch /tmp/pwned)"})
    assert "--parallel 8" in derive(base, {"--parallel": 8})    # a plain value is still set
    quoted = HEREDOC.replace("<<EOF", "<<'EOF'")                  # a quoted heredoc is read once
    assert "--parallel '$(x)'" in derive(quoted, {"--parallel": "$(x)"})


# ---------------------------------------------------------------- 5. caps

@pytest.mark.parametrize("sweep, key", [
    ({"levels": [100_000_000_000]}, "sweep.levels"), ({"levels": [1], "input_len": 10 ** 11}, "sweep.input_len"),
    ({"levels": [1], "output_len": 10 ** 11}, "sweep.output_len"),
    ({"levels": [1], "num_prompts": 10 ** 11}, "sweep.num_prompts"),
    ({"levels": list(range(1, 200))}, "sweep.levels"),
    ({"levels": [10_000], "prompts_per_stream": 1000}, "sweep.prompts_per_stream")])
def test_sizes_past_their_cap_are_refused(sweep, key):
    with pytest.raises(CampaignError, match=key.replace(".", r"\.")):
        from_dict({"sweep": sweep, "config": [{"name": "a"}]})


def test_a_million_cells_are_refused_at_once_and_the_cap_can_be_raised():
    grid = {"base": "a", "flags": {"--a": list(range(1000)), "--b": list(range(1000))}}
    started = time.process_time()
    with pytest.raises(CampaignError, match=r"1,000,000 cells, more than the limit of 1,000"):
        from_dict({"sweep": SWEEP, "grid": [grid]})
    assert time.process_time() - started < 5      # counted, never built
    small = {"base": "a", "flags": {"--a": list(range(40)), "--b": list(range(40))}}     # 1,600 cells
    with pytest.raises(CampaignError, match="max_cells or --max-cells"):
        from_dict({"sweep": SWEEP, "grid": [small]})
    assert from_dict({"sweep": SWEEP, "grid": [small]}, max_cells=2000).policy.max_cells == 2000
    spec = from_dict({"sweep": SWEEP, "grid": [small], "policy": {"max_cells": 1600}})
    assert from_dict(spec.to_json()).policy.max_cells == 1600        # kept for the driver's own read
    with pytest.raises(CampaignError, match="policy.max_cells"):
        from_dict({"sweep": SWEEP, "grid": [small], "policy": {"max_cells": limits.MAX_CELLS_CEILING + 1}})


def test_campaign_run_refuses_too_many_cells_in_one_line_and_creates_nothing(box, capsys, monkeypatch):
    path = box / "big.toml"
    path.write_text('[sweep]\nlevels = [1]\n[[grid]]\nbase = "smol"\n'
                    'flags = { "--parallel" = [%s], "--ctx-size" = [%s] }\n'
                    % (",".join(map(str, range(1, 101))), ",".join(map(str, range(1, 101)))))
    code, out, err = gpudeck_here("campaign", "run", str(path), "-p", "box")
    assert code == 2 and "10,000 cells" in err and "--max-cells" in err
    _one_line(err)
    assert _campaigns() == []


# ---------------------------------------------------------------- 6. malformed state

def _bad_states(profile: str) -> dict[str, Path]:
    """One campaign folder per way a state.json can be wrong."""
    out = {}
    for kind, text in {"levels-text": None, "brackets": "[" * 100_000, "not-json": "{", "cells-text": None,
                       "status": None, "huge-number": None}.items():
        state = _saved(profile)
        doc = state.to_json()
        if kind == "levels-text":
            doc["cells"][0]["levels"] = "abc"
        elif kind == "cells-text":
            doc["cells"] = "abc"
        elif kind == "status":
            doc["cells"][0]["status"] = {"x": 1}
        elif kind == "huge-number":
            doc["driver_pid"] = 10 ** 400
        path = state.dir / "state.json"
        path.write_text(text if text is not None else json.dumps(doc))
        out[kind] = path
    fifo = _saved(profile)
    (fifo.dir / "state.json").unlink()
    os.mkfifo(fifo.dir / "state.json")
    out["fifo"] = fifo.dir / "state.json"
    return out


def test_every_bad_state_is_one_line_naming_its_file_and_the_others_still_list(box, capsys, monkeypatch):
    good = _saved("box", status="finished")
    bad = _bad_states("box")
    found = st.read_campaigns("box")
    assert [s.id for s in found.records] == [good.id]
    assert sorted(u.path for u in found.unreadable) == sorted(bad.values())
    code, out, err = gpudeck_here("campaign", "list", "-p", "box")
    assert code == 0 and "Traceback" not in out + err
    assert good.id in out
    for path in bad.values():
        assert sum(str(path) in line for line in out.splitlines()) == 1, (path, out)
    listed = json.loads(gpudeck_here("campaign", "list", "-p", "box", "--json")[1])
    assert [c["id"] for c in listed["campaigns"]] == [good.id] and len(listed["errors"]) == len(bad)
    for kind, path in bad.items():
        code, out, err = gpudeck_here("campaign", "show", path.parent.name, "-p", "box")
        assert code != 0 and str(path) in err, (kind, err)
        _one_line(err)


async def test_the_campaign_tab_shows_the_readable_campaign_past_a_bad_newer_one(box):
    from console.session import HostSession
    from screens.campaign_pane import CampaignPane
    from tests.harness import HostApp, wait_until

    good = _saved("box", status="finished", created_at=1.0)
    newer = _saved("box", created_at=time.time() + 60)
    doc = newer.to_json()
    doc["cells"][0]["levels"] = "abc"              # crashed the grid widget (and the console) before
    (newer.dir / "state.json").write_text(json.dumps(doc))
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 30)) as pilot:
        await wait_until(pilot, lambda: app.pane.state is not None, 5, "the readable campaign")
        assert app.pane.state.id == good.id
        assert good.id in str(app.pane.query_one("#camp-title").render())


def test_numbers_outside_their_physical_range_read_na_and_a_huge_note_is_cut(box, capsys, monkeypatch):
    levels = [{"concurrency": 1, "status": "ok", "output_throughput": 1e308, "ttft_p99": -1, "tpot_p99": 5.0},
              {"concurrency": 4, "status": "ok", "output_throughput": -1.0}]
    state = _saved("box", cells=[st.Cell(name="a", base="a", status="done", levels=levels,
                                         note=LINE + "N" * 1_000_000)], status="finished", note=LINE + "M" * 1_000_000)
    read = st.load("box", state.id)
    assert [lv["output_throughput"] for lv in read.cells[0].levels] == [None, None]
    assert read.cells[0].levels[0]["ttft_p99"] is None and read.cells[0].levels[0]["tpot_p99"] == 5.0
    code, out, err = gpudeck_here("campaign", "show", state.id, "-p", "box")
    assert code == 0 and "1e+308" not in out and "0" * 30 not in out
    assert not re.search(r"(?<![\w-])-1\b", out) and "N/A" in out
    assert len(out) < 3 * limits.MAX_NOTE_CHARS + 3000 and "…" in out
    assert not unsafe_chars(out + err)


# ---------------------------------------------------------------- 10, 11. one lock per machine and port

def test_a_second_profile_on_the_same_machine_is_refused_and_leaves_no_campaign(box, capsys, monkeypatch):
    store.save(profile_from_dict("box2", {"transport": "local", "server": {
        "scripts_dir": str(box / "scripts"), "log_dir": str(box / "logs2")}}))
    lock.acquire(lock.local_identity(), None, "campaign-20260101-000000", "box", pid=os.getpid())
    try:
        path = box / "c.toml"
        path.write_text('[sweep]\nlevels = [1]\n[[config]]\nname = "smol"\n')
        code, out, err = gpudeck_here("campaign", "run", str(path), "-p", "box2")
        assert code == 1 and "driven by campaign campaign-20260101-000000 of profile box" in err, err
        _one_line(err)
        assert _campaigns("box2") == []           # no phantom: the lock was checked before anything was made
    finally:
        lock.release(lock.local_identity(), None, "campaign-20260101-000000", pid=os.getpid())


def test_ports_share_a_host_but_any_port_holds_all_of_it():
    me = os.getpid()
    lock.acquire("machine:test", 8000, "campaign-a", "p1", pid=me)
    try:
        lock.check_free("machine:test", 8001, "p2")            # another port of the host: free
        with pytest.raises(lock.LockHeld, match="port 8000"):
            lock.check_free("machine:test", 8000, "p2")
        with pytest.raises(lock.LockHeld, match="campaign-a"):
            lock.check_free("machine:test", None, "p2")        # port unknown: it could be any
    finally:
        lock.release("machine:test", 8000, "campaign-a", pid=me)
    lock.check_free("machine:test", 8000, "p2")


def test_a_stale_lock_is_taken_over():
    dead = subprocess.Popen([sys.executable, "-c", "pass"])
    dead.wait()
    lock.acquire("machine:test", None, "campaign-old", "p1", pid=dead.pid)
    lock.check_free("machine:test", None, "p2")


async def test_two_ssh_names_for_one_host_share_one_identity(sshd, tmp_path):
    other = tmp_path / "ssh_config"
    other.write_text(sshd.ssh_config.read_text().replace("Host gpudeck-test", "Host another-name"))
    first = profile_from_dict("one", {"transport": "ssh", "ssh": {"host": "gpudeck-test",
                                                                  "config_file": str(sshd.ssh_config)}})
    second = profile_from_dict("two", {"transport": "ssh", "ssh": {"host": "another-name", "config_file": str(other)}})
    one, two = await lock.host_identity(first), await lock.host_identity(second)
    assert one == two and one.startswith("ssh-host-key:SHA256:")
    assert one != lock.local_identity()


# ---------------------------------------------------------------- 12. stop signals only a proven driver

def _process(*argv: str, env: dict | None = None) -> subprocess.Popen:
    return subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)", *argv],
                            env={**os.environ, **(env or {})}, start_new_session=True)


def _wait_started(pid: int) -> int:
    for _ in range(200):
        start = driver.start_ticks(pid)
        if start is not None:
            return start
        time.sleep(0.01)
    raise AssertionError(f"no /proc/{pid}/stat")


def test_stop_never_signals_a_forged_driver_pid(box, capsys, monkeypatch):
    state = _saved("box", status="running")
    victim = _process("campaign", state.id)          # argv names the campaign: the old proof
    token = driver.new_token()
    try:
        for forged in ({"driver_pid": victim.pid},
                       {"driver_pid": victim.pid, "driver_start": _wait_started(victim.pid), "driver_token": token}):
            doc = state.to_json() | forged
            (state.dir / "state.json").write_text(json.dumps(doc))
            code, out, err = gpudeck_here("campaign", "stop", state.id, "-p", "box")
            assert code != 0 and "no running driver" in err
            assert victim.poll() is None, "a process that is not the driver was signalled"
    finally:
        victim.kill()
        victim.wait()


def test_stop_signals_the_driver_it_spawned(box, capsys, monkeypatch):
    state = _saved("box", status="running")
    token = driver.new_token()
    real = _process(env={driver.TOKEN_ENV: token})
    try:
        start = _wait_started(real.pid)
        wrong_start = state.to_json() | {"driver_pid": real.pid, "driver_start": start + 1, "driver_token": token}
        (state.dir / "state.json").write_text(json.dumps(wrong_start))
        assert gpudeck_here("campaign", "stop", state.id, "-p", "box")[0] != 0   # a reused pid
        assert real.poll() is None
        (state.dir / "state.json").write_text(json.dumps(wrong_start | {"driver_start": start}))
        code, out, err = gpudeck_here("campaign", "stop", state.id, "-p", "box")
        assert code == 0 and f"pid {real.pid}" in out
        assert real.wait(timeout=20) == -signal.SIGTERM
    finally:
        real.kill()
        real.wait()


# ---------------------------------------------------------------- 14. a full disk never skips a stop

async def test_a_full_disk_mid_campaign_still_stops_the_server(tmp_path, monkeypatch):
    from console.campaign.runner import CampaignRunner
    from console.store import launches

    scripts, bin_dir = tmp_path / "scripts", tmp_path / "bin"
    scripts.mkdir()
    bin_dir.mkdir()
    (bin_dir / "llama-server").write_text("#!/bin/sh\nexec sleep 120\n")     # a server that never gets ready
    (bin_dir / "llama-server").chmod(0o755)
    (scripts / "sleepy.sh").write_text(f"#!/bin/sh\nexec {bin_dir}/llama-server -m /m.gguf --port {free_port()}\n")
    (scripts / "sleepy.sh").chmod(0o755)
    profile = profile_from_dict("disk", {"transport": "local", "server": {
        "scripts_dir": str(scripts), "log_dir": str(tmp_path / "logs"), "kill_grace_s": 5.0},
        "ui": {"simulated": False}})
    store.save(profile)
    spec = from_dict({"sweep": SWEEP, "config": [{"name": "sleepy"}],
                      "policy": {"ready_timeout_s": 1, "gpu_idle_timeout_s": 1}})
    state = st.CampaignState(id=st.new_id("disk"), profile="disk", spec=spec.to_json(),
                             cells=[st.Cell(name="sleepy", base="sleepy")])
    st.save(state)
    real_save = st.save

    def full_disk(s):
        if any(c.launch_id for c in s.cells):       # the server is up: from now on the disk is full
            raise OSError(28, "No space left on device")
        real_save(s)
    monkeypatch.setattr(st, "save", full_disk)
    launched = []
    try:
        final = await CampaignRunner(state, profile).run()
        launched = launches.load_all("disk")
        assert launched, (final.status, final.note, final.cells[0].status, final.cells[0].note)
        assert all(not r.live for r in launched), [(r.state, r.pgid, final.note, final.cells[0].note) for r in launched]
        for record in launched:
            assert record.pgid and not _group_alive(record.pgid), "the server outlived a failed save"
        assert final.status == "failed" and "No space left" in final.note
    finally:
        for record in launched or launches.load_all("disk"):
            if record.pgid:
                try:
                    os.killpg(record.pgid, signal.SIGKILL)
                except (ProcessLookupError, PermissionError):
                    pass


def _group_alive(pgid: int) -> bool:
    for stat_file in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat_file.read_text().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if int(fields[2]) == pgid and fields[0] != "Z":
            return True
    return False


# ---------------------------------------------------------------- low: odd campaign files

def test_odd_campaign_files_are_refused_in_one_line(tmp_path):
    deep = tmp_path / "deep.toml"
    deep.write_text("a = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(CampaignError, match="nested too deep"):
        load(deep)
    with pytest.raises(CampaignError, match="not a regular file"):
        load("/dev/zero")
    big = tmp_path / "big.toml"
    big.write_bytes(b"#" * (limits.MAX_CAMPAIGN_FILE_BYTES + 1))
    with pytest.raises(CampaignError, match="limit"):
        load(big)
    with pytest.raises(CampaignError, match="not a regular file"):
        load(tmp_path)


def test_a_fifo_as_campaign_file_is_refused_not_waited_on(box):
    fifo = box / "c.toml"
    os.mkfifo(fifo)

    out = gpudeck("campaign", "run", str(fifo), "-p", "box")
    assert out.returncode == 2 and "not a regular file" in out.stderr
    _one_line(out.stderr)


# ---------------------------------------------------------------- 6, generated: any field, any value

def _paths(doc, prefix=()):
    """Every place in a JSON document a value can be swapped."""
    yield prefix
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from _paths(value, (*prefix, key))
    elif isinstance(doc, list):
        for i, value in enumerate(doc):
            yield from _paths(value, (*prefix, i))


def _swap(doc, path, value):
    if not path:
        return value
    copy = json.loads(json.dumps(doc))
    here = copy
    for key in path[:-1]:
        here = here[key]
    here[path[-1]] = value
    return copy


def test_any_value_in_any_field_is_read_or_refused_in_one_line_and_every_view_draws_it():
    """Generated state files: each is read into a typed state or refused with StateRefused;
    whatever is read, the result table, the comparison, the view and the grid rows draw it."""
    from hypothesis import HealthCheck, given, settings
    from hypothesis import strategies as hs

    from console.campaign.compare import compare, table_lines
    from widgets.campaign_grid import column_widths, row_cells

    cells = [st.Cell(name="a", base="a", status="done", flags={"--x": 1}, started_at=1.0, ended_at=2.0,
                     levels=[{"concurrency": 1, "status": "ok", "output_throughput": 5.0, "ttft_p99": 3.0,
                              "tpot_p99": 2.0, "completed": 1, "failed": 0}],
                     live={"concurrency": 1, "tok_s": 3.0}),
             st.Cell(name="b", base="b", status="crashed", crash_class="oom")]
    spec = from_dict({"sweep": {"levels": [1, 4], "slo": {"ttft_ms": 10}}, "config": [{"name": "a"}]})
    good = st.CampaignState(id="campaign-x", profile="box", spec=spec.to_json(), cells=cells).to_json()
    places = list(_paths(good))
    leaf = hs.one_of(hs.none(), hs.booleans(), hs.integers(-(1 << 70), 1 << 70), hs.floats(),
                     hs.text(max_size=12), hs.just(LINE))
    value = hs.recursive(leaf, lambda inner: hs.one_of(hs.lists(inner, max_size=3),
                                                       hs.dictionaries(hs.text(max_size=8), inner, max_size=3)),
                         max_leaves=6)
    counts = {"read": 0, "refused": 0}

    @settings(max_examples=300, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(hs.sampled_from(places), value)
    def check(path, new):
        doc = _swap(good, path, new)
        try:
            state = st.state_from_doc(doc, "campaign-x", "box")
        except st.StateRefused as exc:
            assert "\n" not in str(exc)
            counts["refused"] += 1
            return
        counts["read"] += 1
        lines = table_lines(state)
        compare(state).to_json()
        owner.read(state).line()
        levels = state.spec.get("sweep", {}).get("levels") or []
        rows = [row_cells(c.to_json(), levels) for c in state.cells]
        column_widths([c.to_json() for c in state.cells])
        assert len(rows) == len(state.cells) and len(lines) >= 2 * len(state.cells)

    check()
    print(f"generated state files: {counts['read']} read, {counts['refused']} refused")
    assert counts["read"] and counts["refused"]
