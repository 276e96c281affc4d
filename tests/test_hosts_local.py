"""LocalHost: the same interface over asyncio subprocesses."""
from __future__ import annotations

import asyncio
import json
import sys
import time

import pytest

from console.hosts import HostError, LocalHost
from tests.test_hosts_ssh import AWKWARD, _alive


async def test_run_passes_arguments_exactly():
    host = LocalHost()
    result = await host.run([sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))", *AWKWARD])
    assert json.loads(result.stdout) == AWKWARD


async def test_missing_command_is_127_not_a_traceback():
    result = await LocalHost().run(["definitely-not-a-command-xyz"])
    assert result.returncode == 127 and "command not found" in result.stderr


async def test_timeout_kills_the_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    with pytest.raises(HostError) as info:
        await LocalHost().run(["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"], timeout=0.5)
    assert info.value.kind == "command-timeout"
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 15  # a bound for a busy machine, not a speed check
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _alive(pid), "the grandchild survived the timeout"


async def test_stream_close_ends_process():
    host = LocalHost()
    async with host.stream(["sh", "-c", "while true; do echo x; sleep 0.02; done"]) as stream:
        async for _ in stream:
            break
        pid = stream.proc.pid
    assert not _alive(pid)


async def test_stream_returncode():
    async with LocalHost().stream(["sh", "-c", "echo 1; exit 4"]) as stream:
        assert [line async for line in stream] == ["1"]
    assert stream.returncode == 4


async def test_forward_port_is_identity_locally():
    assert await LocalHost().forward_port(30000) == 30000


@pytest.fixture
def popen_threads(monkeypatch):
    """The thread each process of this test was started from."""
    import subprocess
    import threading

    threads: list[threading.Thread] = []
    real = subprocess.Popen

    class Recorded(real):
        def __init__(self, *args, **kwargs):
            threads.append(threading.current_thread())
            super().__init__(*args, **kwargs)

    monkeypatch.setattr(subprocess, "Popen", Recorded)
    return threads


async def test_commands_and_streams_start_off_the_event_loop(popen_threads):
    """fork/exec blocks the thread that does it; the UI's loop must never be that thread."""
    import threading

    host = LocalHost()
    assert (await host.run(["sh", "-c", "echo ok"])).stdout == "ok\n"
    async with host.stream(["sh", "-c", "echo 1; echo 2"]) as stream:
        assert [line async for line in stream] == ["1", "2"]
    assert stream.returncode == 0
    assert len(popen_threads) == 2
    assert all(t is not threading.current_thread() for t in popen_threads)


async def test_cancelled_run_ends_its_process_group(tmp_path):
    pidfile = tmp_path / "pid"
    task = asyncio.create_task(LocalHost().run(["sh", "-c", f"sleep 30 & echo $! > {pidfile}; wait"]))
    deadline = time.monotonic() + 10
    while not pidfile.exists() or not pidfile.read_text().strip():
        assert time.monotonic() < deadline, "the command never started"
        await asyncio.sleep(0.02)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    pid = int(pidfile.read_text())
    deadline = time.monotonic() + 3
    while _alive(pid) and time.monotonic() < deadline:
        await asyncio.sleep(0.05)
    assert not _alive(pid), "the grandchild survived the cancel"


async def test_run_sends_its_input_and_reads_large_output():
    text = "x" * 300_000
    result = await LocalHost().run(["sh", "-c", "cat; head -c 2000000 /dev/zero | tr '\\0' y"], input=text)
    assert result.ok and result.stdout.startswith(text) and len(result.stdout) == 300_000 + 2_000_000


async def test_stream_of_a_missing_command_is_a_host_error():
    with pytest.raises(HostError) as info:
        async with LocalHost().stream(["definitely-not-a-command-xyz"]):
            pass
    assert info.value.kind == "other" and "command not found" in str(info.value)
