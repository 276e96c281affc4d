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
