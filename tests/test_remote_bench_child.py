"""The TUI's way: the sweep runs as a child process through a tunnel its parent owns. An SSH drop
mid-level is noticed by the child on a connection of its own; the parent's tunnel comes back on
the same local port; the level is run again instead of being called a death."""
from __future__ import annotations

import asyncio

import pytest

from console.bench.process import SweepProcess, sweep_argv
from console.hosts import SSHHost
from tests.realparts import start_llama_server


@pytest.fixture
def one_thread_server(tmp_path):
    server = start_llama_server(tmp_path / "llama.log", "-t", "1", "-np", "2", "-c", "1024")
    yield server
    server.stop()


async def test_child_sweep_tells_a_dropped_tunnel_from_a_dead_server(ssh_profile, sshd, one_thread_server):
    host = SSHHost(ssh_profile)  # the parent's host: it owns the tunnel
    sweep = None
    try:
        local = await host.forward_port(one_thread_server.port)
        values = {"url": f"http://127.0.0.1:{local}", "levels": "2", "num_prompts": "8",
                  "input_len": 16, "output_len": 8, "server_port": one_thread_server.port}
        sweep = SweepProcess(sweep_argv(values, ssh_profile.name, tunnelled=True))
        await sweep.start()
        answers, dropped, ends = 0, False, []

        async def read() -> None:
            nonlocal answers, dropped
            async for event in sweep.events():
                if event.get("event") == "request" and not dropped:
                    answers += 1
                    if answers == 2:
                        dropped = True
                        sshd.drop_connections()  # the parent's and the child's connections both break
                if event.get("event") == "level-end":
                    ends.append(event["summary"])

        await asyncio.wait_for(read(), 120)
        code, stderr = await sweep.finish()
        assert dropped and len(ends) == 1, stderr
        level = ends[0]
        assert level.get("server_died") is None, (level, stderr)
        attempt = level.get("interrupted_attempt")
        assert attempt and attempt["status"] == "interrupted", (level["status"], level["errors"], stderr)
        lost = attempt["link_lost"]
        assert lost["dropped"] and lost["back_at"] and lost["server"] == "answering" and lost["health"] == 200
        assert level["status"] == "ok" and level["completed"] == 8, level["errors"]
        assert code == 0
        assert await host.forward_port(one_thread_server.port) == local, "the tunnel moved to another port"
    finally:
        if sweep is not None:
            await sweep.close()
        await host.close()
