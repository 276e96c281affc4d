"""Server lifecycle honesty: exit status after KILL, escaped processes, --wait, logs -f -n."""
from __future__ import annotations

import asyncio
import json
import os
import queue
import socket
import subprocess
import sys
import threading
from pathlib import Path

import pytest

from console.hosts import LocalHost
from console.servers import configs as cfgs
from console.servers import lifecycle
from console.store import launches
from console.store.launches import LaunchRecord
from console.servers.signals import process_table
from console.session import HostSession
from profiles import store
from tests.cli import gpudeck
from tests.realparts import free_port

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def local_scripts(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    profile = store.load("local")
    profile.server.scripts_dir = str(scripts)
    profile.server.log_dir = str(tmp_path / "logs")
    store.save(profile)
    yield profile, scripts
    # whatever a test started dies with it: the launch's processes carry its mark
    host = LocalHost()

    async def cleanup():
        for record in launches.load_all("local"):
            pids = await lifecycle.marked_pids(host, record.id)
            for pid in pids:
                try:
                    os.kill(pid, 9)
                except ProcessLookupError:
                    pass
    asyncio.run(cleanup())


def _script(folder: Path, name: str, body: str) -> None:
    path = folder / f"{name}.sh"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


async def _launch(profile, name: str):
    session = HostSession.open(profile)
    config = cfgs.find(await cfgs.discover(session), name)
    record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
    return session, record


async def _until(check, what: str, timeout: float = 30.0):
    """Poll `check` (an async predicate on the real system) until it holds."""
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    while not await check():
        if loop.time() > end:
            raise AssertionError(f"timed out waiting for {what}")
        await asyncio.sleep(0.1)


async def test_exit_status_is_recorded_after_kill_even_with_orphaned_children(local_scripts):
    # TERM is ignored, so only KILL ends it; the subshell is orphaned when the script
    # dies, and where pid 1 does not reap it stays a zombie in the group
    profile, scripts = local_scripts
    _script(scripts, "stubborn", "trap '' TERM\n(trap '' TERM; sleep 1000) &\nexec sh -c \"trap '' TERM; sleep 1000 & wait\"")
    session, record = await _launch(profile, "stubborn")
    async def started() -> bool:  # the subshell's sleep, the main shell and its sleep
        return len((await process_table(session.host)).members(record.pgid)) >= 3

    await _until(started, "the script's processes")
    result = await lifecycle.stop(session, record, grace_s=0.5)
    assert result.signal == "KILL"
    assert result.exit_status == 137 and record.exit_status == 137
    saved = launches.get("local", record.id)
    assert saved.state == "stopped" and saved.exit_status == 137
    assert result.clean, result.to_json()


async def test_a_process_that_escaped_the_group_is_reported_and_can_be_killed(local_scripts):
    profile, scripts = local_scripts
    port = free_port()
    listener = (f"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); "
                "time.sleep(1000)")
    _script(scripts, "escapes", f"setsid {sys.executable} -c \"{listener}\" &\nexec sleep 1000 # --port {port}")
    session, record = await _launch(profile, "escapes")
    assert record.port == port

    async def listening() -> bool:
        with socket.socket() as probe:
            return probe.connect_ex(("127.0.0.1", port)) == 0

    await _until(listening, f"the escaped process to listen on {port}")
    result = await lifecycle.stop(session, record, grace_s=5)
    assert not result.clean
    assert [s.holds for s in result.survivors] == [[f"port {port}"]], result.to_json()
    escaped = result.survivors[0].pid
    assert "port" in result.port_held and f"pid {escaped}" in result.port_held
    assert launches.get("local", record.id).escaped == [escaped]
    killed = await lifecycle.kill_escaped(session, record)
    assert killed == [escaped]
    assert launches.get("local", record.id).escaped == []
    await _until(lambda: _not(listening), f"port {port} to be free")


async def _not(check) -> bool:
    return not await check()


def test_cli_stop_says_not_stopped_and_offers_the_kill(local_scripts, gpudeck_home):
    profile, scripts = local_scripts
    port = free_port()
    listener = (f"import socket, time; s = socket.socket(); s.bind(('127.0.0.1', {port})); s.listen(); "
                "time.sleep(1000)")
    _script(scripts, "escapes", f"setsid {sys.executable} -c \"{listener}\" &\nexec sleep 1000 # --port {port}")
    assert gpudeck("server", "launch", "escapes", "-p", "local", home=gpudeck_home).returncode == 0
    for _ in range(300):  # the escaped listener is up (the real port, not a timer)
        with socket.socket() as probe:
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                break
        threading.Event().wait(0.1)
    stop = gpudeck("server", "stop", "escapes", "--grace", "5", "-p", "local", home=gpudeck_home)
    assert stop.returncode == 1, stop.stderr
    assert stop.stdout.startswith("NOT fully stopped escapes")
    assert f"holds port {port}" in stop.stderr and "--kill-escaped" in stop.stderr
    status = gpudeck("server", "status", "-p", "local", home=gpudeck_home)
    assert status.returncode == 0 and "stopped" in status.stdout and "still running: pid " in status.stdout
    killed = gpudeck("server", "stop", "escapes", "--kill-escaped", "--json", "-p", "local", home=gpudeck_home)
    assert killed.returncode == 0, killed.stderr
    assert len(json.loads(killed.stdout)["killed"]) == 1
    assert "still running" not in gpudeck("server", "status", "-p", "local", home=gpudeck_home).stdout


def test_launch_wait_that_times_out_exits_non_zero(local_scripts, gpudeck_home):
    profile, scripts = local_scripts
    _script(scripts, "never-ready", "exec sleep 1000")
    result = gpudeck("server", "launch", "never-ready", "--wait", "--timeout", "1", "-p", "local", home=gpudeck_home)
    assert result.returncode != 0
    assert "not ready after 1s" in result.stderr


def test_logs_follow_honours_n(tmp_path, gpudeck_home):
    log = tmp_path / "server.log"
    log.write_text("".join(f"line {i}\n" for i in range(1, 101)))
    launches.save("local", LaunchRecord(id="r1", config="cfg", script=None, log=str(log), exit_file=None,
                                       state="stopped"))
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPUDECK_HOME=str(gpudeck_home))
    proc = subprocess.Popen([sys.executable, "-m", "console", "server", "logs", "cfg", "-f", "-n", "3",
                             "-p", "local"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env)
    lines: queue.Queue = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    try:
        got = [lines.get(timeout=60) for _ in range(3)]
        assert got == ["line 98\n", "line 99\n", "line 100\n"]
        with open(log, "a") as fh:
            fh.write("line 101\n")
        assert lines.get(timeout=60) == "line 101\n"
    finally:
        proc.kill()
        proc.wait()
