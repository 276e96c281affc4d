"""The remote host as the main path, end to end: a real OpenSSH sshd on 127.0.0.1 stands for the
GPU box and a real llama.cpp server runs "remotely" behind it.

Launch a config over SSH, sweep through the SSH tunnel with the engine API, drop the SSH
connection in the middle of a level and check the verdict (a lost link, not a dead server; the
level is run again), lose the link for longer than the sweep waits (`interrupted (link lost)`),
kill the server and check nothing is left on the remote side, and run a crashing script: one
crash record, one suggestion, also after a second console re-attaches.
"""
from __future__ import annotations

import asyncio
import os
import shlex
from pathlib import Path

import pytest

from console.bench.linkcheck import for_sweep
from console.bench.results import RunStore
from console.bench.runner import BenchConfig, Sweep
from console.servers import configs as cfgs
from console.servers import lifecycle
from console.store import crashes, launches
from console.servers.monitor import ServerMonitor
from console.servers.procs import port_in_use
from console.session import HostSession
from profiles import store
from profiles.task_suggestion import crash_suggestion, sweep_suggestions
from tests.realparts import free_port, llama_server_binary, smollm_model, start_llama_server

LOGS = Path(__file__).parent / "fixtures" / "logs"


@pytest.fixture(autouse=True)
async def _kill_leftovers():
    """Whatever a test launched dies with it, pass or fail."""
    yield
    from console.hosts import LocalHost

    for name in store.names():
        for record in launches.load_all(name):
            if record.pgid:
                await lifecycle.signal_group(LocalHost(), record.pgid, "KILL")


def _script(folder: Path, name: str, body: str) -> None:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


async def _monitor_until(session, record, states, timeout=60.0):
    reached = asyncio.Event()
    found: list[dict] = []
    monitor = ServerMonitor(session, record, poll_s=0.3, on_crash=found.append,
                            on_state=lambda rec: reached.set() if rec.state in states else None)
    task = asyncio.create_task(monitor.run())
    try:
        await asyncio.wait_for(reached.wait(), timeout)
    except asyncio.TimeoutError:
        task.cancel()
        raise AssertionError(f"{record.config} still {record.state} after {timeout:g} s") from None
    return monitor, task, found


def _dropper(sshd, after_requests: int, action):
    """An emit callback that breaks the link once, after `after_requests` answers of level 0."""
    seen = {"requests": 0, "done": False}
    events: list[dict] = []

    def emit(event: dict) -> None:
        events.append(event)
        if event.get("event") == "request" and event.get("level") == 0 and not seen["done"]:
            seen["requests"] += 1
            if seen["requests"] >= after_requests:
                seen["done"] = True
                action()

    return emit, events


def _alive_here(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as fh:
        return fh.read().split()[2] != "Z"


async def test_launch_sweep_through_a_drop_and_kill_leaves_nothing(scripts_profile, sshd):
    profile, scripts = scripts_profile
    port = free_port()
    _script(scripts, "smol remote.sh", f"exec {shlex.quote(str(llama_server_binary()))} "
            f"-m {shlex.quote(str(smollm_model()))} --host 127.0.0.1 --port {port} -c 1024 -np 2 -t 1")
    session = HostSession.open(profile)
    link = None
    try:
        # 1. launch over SSH, ready
        config = cfgs.find(await cfgs.discover(session), "smol remote")
        record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        monitor, watch_task, _ = await _monitor_until(session, record, ("ready",))
        assert record.state == "ready"

        # 2. sweep through the tunnel; 3. the SSH connection drops at ~25% of the level
        local = await session.host.forward_port(port)
        url = f"http://127.0.0.1:{local}"
        emit, events = _dropper(sshd, 2, sshd.drop_connections)
        bench = BenchConfig(url=url, concurrency=[2], input_len=16, output_len=8, num_prompts=8,
                            profile=profile.name, tunnelled=True, server_port=port)
        link = await for_sweep(url, profile.name, port, host=session.host, wait_s=30)
        doc = await Sweep(bench, emit=emit, store=RunStore(profile.name), link=link).run()
        assert any(e.get("event") == "request" and e.get("level") == 0 for e in events)

        level = doc["levels"][0]
        assert level.get("server_died") is None, level.get("server_died")
        attempt = level.get("interrupted_attempt")
        assert attempt is not None, f"the drop was not noticed: {level['status']} {level['errors']}"
        assert attempt["status"] == "interrupted"
        lost = attempt["link_lost"]
        assert lost["dropped"] and lost["back_at"] is not None
        assert lost["server"] == "alive" and lost["pid"] == record.pid and lost["health"] == 200
        assert "server pid" in lost["message"] and "alive" in lost["message"]
        assert _alive_here(record.pid), "the server the verdict calls alive is not"
        # the level was run again once the link was back, through the same tunnel URL
        assert level["status"] == "ok" and level["completed"] == 8 and level["failed"] == 0
        assert doc["url"] == url and doc["server_launch"]["launch"] == record.id
        assert sweep_suggestions(doc, doc["run_id"]) == [], "a lost link suggested a rerun task"
        from console.bench.live import view_from_run

        assert view_from_run(doc).levels[0].explanation.startswith("rerun after the link returned (SSH link")

        # 5. kill; nothing is left on the remote side
        watch_task.cancel()
        result = await lifecycle.stop(session, record, grace_s=10)
        assert result.signal == "TERM" and record.state == "stopped"
        left = await session.host.run(["sh", "-c", 'pgrep -g "$1" || true', "sh", str(record.pgid)])
        assert left.stdout.strip() == "", f"processes left in group {record.pgid}: {left.stdout}"
        assert await port_in_use(session.host, port) is False
    finally:
        if link is not None:
            await link.close()
        await session.host.close()


@pytest.fixture
def one_thread_server(tmp_path):
    """A llama.cpp server of its own, one thread (a busy box makes spinning threads crawl)."""
    server = start_llama_server(tmp_path / "llama.log", "-t", "1", "-np", "2", "-c", "1024")
    yield server
    server.stop()


async def test_a_link_that_does_not_return_in_time_marks_the_level_interrupted(ssh_profile, sshd,
                                                                                 one_thread_server):
    llama_server = one_thread_server
    session = HostSession.open(ssh_profile)
    link = None
    try:
        local = await session.host.forward_port(llama_server.port)
        url = f"http://127.0.0.1:{local}"
        emit, events = _dropper(sshd, 2, sshd.stop)  # the host stays unreachable
        bench = BenchConfig(url=url, concurrency=[2, 4], input_len=16, output_len=8, num_prompts=8,
                            profile=ssh_profile.name, tunnelled=True, server_port=llama_server.port)
        link = await for_sweep(url, ssh_profile.name, llama_server.port, host=session.host, wait_s=2)
        try:
            doc = await Sweep(bench, emit=emit, link=link).run()
        finally:
            sshd.start()
        first, second = doc["levels"]
        assert first["status"] == "interrupted" and first.get("server_died") is None
        assert not [e for e in first["errors"] if e.startswith("stalled")], \
            f"a request was left hanging on the dead link: {first['errors']}"
        assert first["link_lost"]["back_at"] is None and first["link_lost"]["server"] == "unknown"
        assert "not back within 2 s" in first["link_lost"]["message"]
        assert second["status"] == "skipped" and second["skipped_because"] == "link lost"
        assert llama_server.proc.poll() is None  # the server never died
        from console.bench.live import view_from_run

        view = view_from_run(doc)
        assert view.levels[0].explanation.startswith("interrupted (link lost): SSH link to testbox lost")
    finally:
        if link is not None:
            await link.close()
        await session.host.close()


async def test_a_crashing_script_gives_one_crash_record_and_one_suggestion(scripts_profile):
    profile, scripts = scripts_profile
    _script(scripts, "crashy.sh", f"cat {shlex.quote(str(LOGS / 'sglang-illegal-address-cascade.log'))}; "
            "sleep 0.3; exit 1")
    session = HostSession.open(profile)
    try:
        config = cfgs.find(await cfgs.discover(session), "crashy")
        record = await lifecycle.launch(session, config.name, config.script, config.flags, None)
        monitor, task, found = await _monitor_until(session, record, ("crashed",))
        await asyncio.wait_for(task, 30)
        # a second console re-attaches and follows the same record: still one crash
        other = HostSession.open(store.load(profile.name))
        try:
            await lifecycle.reattach(other)
        finally:
            await other.host.close()
    finally:
        await session.host.close()
    saved = [c.to_doc() for c in crashes.read_crashes(profile.name).records]
    assert len(saved) == 1 and saved[0]["class"] == "cuda-illegal-address"
    assert saved[0]["config"] == "crashy"
    suggestions = [s for s in (crash_suggestion(doc, f"{doc['id']}.json") for doc in saved) if s]
    assert len(suggestions) == 1 and suggestions[0].text.startswith("Investigate cuda-illegal-address in crashy")


async def test_a_server_that_really_dies_mid_level_is_a_death_checked_over_ssh(scripts_profile):
    profile, scripts = scripts_profile
    port = free_port()
    _script(scripts, "doomed.sh", f"exec {shlex.quote(str(llama_server_binary()))} "
            f"-m {shlex.quote(str(smollm_model()))} --host 127.0.0.1 --port {port} -c 1024 -np 2 -t 1")
    session = HostSession.open(profile)
    link = None
    try:
        config = cfgs.find(await cfgs.discover(session), "doomed")
        record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        monitor, watch_task, _ = await _monitor_until(session, record, ("ready",))
        watch_task.cancel()
        local = await session.host.forward_port(port)
        url = f"http://127.0.0.1:{local}"
        emit, events = _dropper(None, 2, lambda: os.killpg(record.pgid, 9))  # the server dies, the link lives
        bench = BenchConfig(url=url, concurrency=[2, 4], input_len=16, output_len=8, num_prompts=8,
                            profile=profile.name, tunnelled=True, server_port=port)
        link = await for_sweep(url, profile.name, port, host=session.host, wait_s=10)
        doc = await Sweep(bench, emit=emit, link=link).run()
        first, second = doc["levels"]
        assert first["status"] == "failed" and "link_lost" not in first
        died = first["server_died"]
        assert died["checked_over_ssh"] and died["pid"] == record.pid
        assert f"server pid {record.pid} exited" in died["message"] and "checked over SSH" in died["message"]
        assert "link" not in died["message"], "a death with the link up blamed the link"
        assert second["status"] == "skipped"
    finally:
        if link is not None:
            await link.close()
        await session.host.close()
