"""Server lifecycle through the real sshd with a real llama.cpp server."""
from __future__ import annotations

import asyncio
import shlex
from pathlib import Path

import pytest

from console.servers import configs as cfgs
from console.servers import lifecycle
from console.store import crashes, launches
from console.servers.monitor import ServerMonitor
from console.session import HostSession
from profiles import store
from tests.realparts import free_port, llama_server_binary, smollm_model

FIXTURES = Path(__file__).parent / "fixtures" / "logs"


def _write_script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


@pytest.fixture
def server_profile(ssh_profile, tmp_path):
    scripts = tmp_path / "scripts dir"
    scripts.mkdir()
    ssh_profile.server.scripts_dir = str(scripts)
    ssh_profile.server.log_dir = str(tmp_path / "logs")
    ssh_profile.server.kill_grace_s = 10
    store.save(ssh_profile)
    return ssh_profile, scripts


def _llama(port: int, model: str | None = None) -> str:
    return (f"exec {shlex.quote(str(llama_server_binary()))} -m {shlex.quote(model or str(smollm_model()))} "
            f"--host 127.0.0.1 --port {port} -c 1024 -np 1 -t 1")


@pytest.fixture(autouse=True)
async def _cleanup_launches():
    """Whatever a test launched dies with the test, pass or fail."""
    yield
    from console.hosts import LocalHost
    from console.servers.lifecycle import signal_group

    host = LocalHost()
    for name in store.names():
        for record in launches.load_all(name):
            if record.pgid:
                await signal_group(host, record.pgid, "KILL")
    for task in _TASKS:
        task.cancel()
    _TASKS.clear()


_TASKS: list[asyncio.Task] = []


async def _follow(session, record, until=("ready", "crashed", "stopped"), timeout=90, sweep=None):
    seen: list[str] = []
    done = asyncio.Event()
    crashes_seen: list[dict] = []

    def on_state(rec):
        if rec.state in until:
            done.set()

    monitor = ServerMonitor(session, record, on_lines=seen.extend, on_state=on_state,
                            on_crash=crashes_seen.append, poll_s=0.3, sweep=sweep)
    task = asyncio.create_task(monitor.run())
    _TASKS.append(task)
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"{record.config} still {record.state} after {timeout}s; log tail: {seen[-10:]}") from None
    return monitor, task, seen, crashes_seen


async def test_launch_ready_reattach_and_kill(server_profile):
    profile, scripts = server_profile
    port = free_port()
    _write_script(scripts, "run smol (tp1).sh", _llama(port))
    session = HostSession.open(profile)
    try:
        found = await cfgs.discover(session)
        config = cfgs.find(found, "run smol (tp1)")
        assert config is not None and config.port == port
        record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        assert record.state == "loading" and record.pgid
        assert Path(record.log).name.startswith("run_smol_tp1-")
        monitor, task, lines, _ = await _follow(session, record)
        assert record.state == "ready", lines[-20:]
        assert record.time_to_ready_s is not None and record.time_to_ready_s < 60
        for _ in range(300):  # ready may come from /health a moment before the log line arrives
            if any("listening" in line for line in lines):
                break
            await asyncio.sleep(0.1)
        assert any("listening" in line for line in lines), lines[-20:]
        task.cancel()

        # a second console instance (fresh connection) re-attaches from the saved record
        other = HostSession.open(store.load(profile.name))
        try:
            live = await lifecycle.reattach(other)
            assert [r.id for r in live] == [record.id]
            assert live[0].state == "ready" and live[0].pgid == record.pgid
            result = await lifecycle.stop(other, live[0], grace_s=10)
        finally:
            await other.host.close()
        assert result.signal == "TERM"
        assert live[0].state == "stopped"
        assert live[0].exit_status is not None  # the wrapper recorded it
        gone = await session.host.run(["sh", "-c", f"kill -0 -{record.pgid} 2>/dev/null && echo alive || echo gone"])
        assert gone.stdout.strip() == "gone"
    finally:
        await session.host.close()


async def test_second_launch_on_same_port_is_port_in_use(server_profile, llama_server):
    profile, scripts = server_profile
    _write_script(scripts, "clash.sh", _llama(llama_server.port))
    session = HostSession.open(profile)
    try:
        config = cfgs.find(await cfgs.discover(session), "clash")
        warnings = await lifecycle.preflight(session, config.port)
        assert [w.kind for w in warnings] == ["port-in-use"]
        record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        monitor, task, lines, crash_docs = await _follow(session, record, until=("crashed", "stopped"))
        await asyncio.wait_for(task, 30)
        assert record.state == "crashed" and record.exit_status not in (0, None)
        assert crash_docs and crash_docs[0]["class"] == "port-in-use"
        assert crashes.read_crashes(profile.name).records[0].config == "clash"
    finally:
        await session.host.close()


async def test_bad_model_path_is_model_load(server_profile, tmp_path):
    profile, scripts = server_profile
    _write_script(scripts, "badmodel.sh", _llama(free_port(), model=str(tmp_path / "no-such-model.gguf")))
    session = HostSession.open(profile)
    try:
        config = cfgs.find(await cfgs.discover(session), "badmodel")
        record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        monitor, task, lines, crash_docs = await _follow(session, record, until=("crashed", "stopped"))
        await asyncio.wait_for(task, 30)
        assert record.state == "crashed"
        assert crash_docs[0]["class"] == "model-load", crash_docs[0]
    finally:
        await session.host.close()


@pytest.mark.parametrize("fixture, expected", [
    ("sglang-illegal-address-cascade.log", "cuda-illegal-address"),
    ("sglang-kv-cache-oom-at-start.log", "oom"),
    ("vllm-nccl-watchdog-timeout.log", "nccl"),
])
async def test_replayed_crash_logs_are_classified(server_profile, fixture, expected):
    profile, scripts = server_profile
    source = FIXTURES / fixture
    _write_script(scripts, "replay.sh", f"cat {shlex.quote(str(source))}; sleep 0.3; exit 1")
    session = HostSession.open(profile)
    try:
        config = cfgs.find(await cfgs.discover(session), "replay")
        record = await lifecycle.launch(session, config.name, config.script, config.flags, None)
        monitor, task, lines, crash_docs = await _follow(session, record, until=("crashed",),
                                                         sweep=lambda: "sweep-test level 256")
        await asyncio.wait_for(task, 30)
        assert record.exit_status == 1
        saved = [c.to_doc() for c in crashes.read_crashes(profile.name).records]
        assert saved[0]["class"] == expected
        assert saved[0]["sweep"] == "sweep-test level 256"
        assert saved[0]["excerpt"]
        assert launches.load_all(profile.name)[0].crash_class == expected
    finally:
        await session.host.close()


async def test_readonly_session_cannot_launch_or_stop(server_profile):
    profile, scripts = server_profile
    session = HostSession.open(profile, readonly=True)
    try:
        with pytest.raises(lifecycle.LaunchError):
            await lifecycle.launch(session, "x", "/bin/true")
    finally:
        await session.host.close()


async def test_processes_are_tied_to_the_config_that_owns_them(server_profile):
    from console.servers.owners import owners

    profile, scripts = server_profile
    _write_script(scripts, "sleeper.sh", "sleep 30 & sleep 30 & wait")
    session = HostSession.open(profile)
    try:
        config = cfgs.find(await cfgs.discover(session), "sleeper")
        assert config.error  # not an inference server command, but still launchable
        record = await lifecycle.launch(session, config.name, config.script)
        found = {}
        for _ in range(300):  # up to 30 s for the script's children to start
            found = await owners(session)
            if len(found) >= 3:
                break
            await asyncio.sleep(0.1)
        # the script's shell and both of its children belong to the config
        assert len(found) >= 3 and set(found.values()) == {"sleeper"}
        assert record.pgid in found
    finally:
        await session.host.close()


@pytest.mark.slow
async def test_a_hung_server_is_reported_as_a_hang(tmp_path):
    """The simulator's hang fault: alive, silent, /health unanswered. No log line shows it."""
    import sys

    import httpx

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    port = free_port()
    _write_script(scripts, "hangs.sh", f"exec {shlex.quote(sys.executable)} -m console sim serve --port {port} "
                                       "--crash-kind hang --startup-s 0.2 --efficiency 0.5")
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    profile.server.log_dir = str(tmp_path / "logs")
    store.save(profile)
    session = HostSession.open(profile)
    config = cfgs.find(await cfgs.discover(session), "hangs")
    record = await lifecycle.launch(session, config.name, config.script, config.flags, port)
    crash_docs: list[dict] = []
    ready = asyncio.Event()
    monitor = ServerMonitor(session, record, on_crash=crash_docs.append, poll_s=0.3, hang_after_s=2.0,
                            on_state=lambda rec: ready.set() if rec.state == "ready" else None)
    task = asyncio.create_task(monitor.run())
    _TASKS.append(task)
    await asyncio.wait_for(ready.wait(), 30)
    async with httpx.AsyncClient(timeout=1.0) as client:  # the first request sets the hang off
        with pytest.raises(httpx.HTTPError):
            await client.post(f"http://127.0.0.1:{port}/v1/completions",
                              json={"prompt": "hi", "max_tokens": 4, "stream": False})
    for _ in range(300):
        if crash_docs:
            break
        await asyncio.sleep(0.1)
    assert crash_docs and crash_docs[0]["class"] == "hang", crash_docs
    assert "has not answered" in crash_docs[0]["summary"]
    assert record.live and record.crash_class == "hang"  # still running: the operator decides to kill it
    assert classify_text_of(record.log) == "healthy"  # the log alone could never have said so


@pytest.mark.slow
async def test_a_launch_whose_launcher_died_before_the_group_is_found_not_called_dead(tmp_path):
    """The launcher saves a record, starts the wrapper, then dies before reading the group: the
    next look takes the group from the wrapper's file and follows the running server; a record
    that has no group yet inside the launch grace is left launching, and only an old one with
    no group anywhere is settled as crashed."""
    import os
    import subprocess
    import time

    from console.hosts import LocalHost

    host = LocalHost()
    session = HostSession.open(store.load("local"))
    server = subprocess.Popen(["sleep", "300"], start_new_session=True)
    try:
        exit_file = tmp_path / "orphan.log.exit"
        Path(f"{exit_file}.pgid").write_text(f"{server.pid}\n")
        orphan = launches.LaunchRecord(id="orphan-1", config="orphan", script=None, log=None,
                                      exit_file=str(exit_file))
        young = launches.LaunchRecord(id="young-1", config="young", script=None, log=None,
                                     exit_file=str(tmp_path / "young.log.exit"))
        old = launches.LaunchRecord(id="old-1", config="old", script=None, log=None,
                                   exit_file=str(tmp_path / "old.log.exit"),
                                   started_at=time.time() - lifecycle.LAUNCH_GRACE_S - 5)
        for record in (orphan, young, old):
            launches.save(session.name, record)
        await lifecycle.reattach(session)
        by_id = {r.id: r for r in launches.load_all(session.name)}
        assert by_id["orphan-1"].pgid == server.pid == os.getpgid(server.pid)
        assert by_id["orphan-1"].state == "loading" and by_id["orphan-1"].live
        assert by_id["young-1"].state == "launching" and by_id["young-1"].pgid is None
        assert by_id["old-1"].state == "crashed"
        assert (await lifecycle.probe(host, by_id["orphan-1"])).alive
    finally:
        server.kill()
        server.wait()


def classify_text_of(path: str) -> str:
    from console.servers.triage import classify_file

    return classify_file(path).cls
