"""`server status` asks the host once per refresh: one command over SSH whatever the number of live
launches, not one to see that the host answers and then one (or more) per launch.

Real sshd (tests/conftest.py) and real launches; the count is of SSH channels opened for commands
(`create_process`), and of connections made, by the asyncssh client itself. Before, a look at three
live launches was five commands (a latency ping, `true`, one probe per launch) and the CLI's
`server status` two connections (the settle before every command, then the status)."""
from __future__ import annotations

import asyncssh

from console.cli import main
from console.runtime.status import launch_status
from console.servers import lifecycle
from console.session import HostSession
from profiles import store

LAUNCHES = 3


class Counted:
    """Counts what the asyncssh client opens while it is installed."""

    def __init__(self, monkeypatch):
        self.commands: list[str] = []
        self.connections = 0
        create_process = asyncssh.SSHClientConnection.create_process
        connect = asyncssh.connect
        counter = self

        async def counted_process(conn, command=None, *args, **kwargs):
            counter.commands.append(str(command)[:120])
            return await create_process(conn, command, *args, **kwargs)

        async def counted_connect(*args, **kwargs):
            counter.connections += 1
            return await connect(*args, **kwargs)

        monkeypatch.setattr(asyncssh.SSHClientConnection, "create_process", counted_process)
        monkeypatch.setattr(asyncssh, "connect", counted_connect)


async def _live_launches(profile, scripts, tmp_path) -> list:
    go = tmp_path / "go"
    script = scripts / "wait.sh"
    script.write_text(f"#!/bin/sh\nwhile [ ! -e {go} ]; do sleep 0.1; done\n")
    script.chmod(0o755)
    session = HostSession.open(profile)
    try:
        return [await lifecycle.launch(session, f"wait{i}", str(script)) for i in range(LAUNCHES)]
    finally:
        await session.host.close()


async def test_one_status_read_is_one_command_on_the_host(scripts_profile, tmp_path, monkeypatch):
    profile, scripts = scripts_profile
    records = await _live_launches(profile, scripts, tmp_path)
    try:
        assert all(r.live for r in records)
        counted = Counted(monkeypatch)
        session = HostSession.open(store.load(profile.name), measure_latency=False)   # as the CLI opens it
        try:
            status = await launch_status(session)
        finally:
            await session.host.close()
        assert status.reached and sorted(r.shown_state for r in status.launches) == ["loading"] * LAUNCHES
        print(f"launch_status over SSH with {LAUNCHES} live launches: {len(counted.commands)} command(s), "
              f"{counted.connections} connection(s)")
        assert counted.connections == 1
        assert len(counted.commands) == 1, counted.commands
    finally:
        (tmp_path / "go").touch()


def test_server_status_from_the_cli_is_one_connection_and_one_command(scripts_profile, tmp_path, monkeypatch,
                                                                      capsys):
    import asyncio

    profile, scripts = scripts_profile
    records = asyncio.run(_live_launches(profile, scripts, tmp_path))
    try:
        counted = Counted(monkeypatch)
        assert main(["server", "status", "-p", profile.name]) == 0
        shown = capsys.readouterr().out
        assert all(f"wait{i} " in shown for i in range(LAUNCHES)) and all(r.live for r in records)
        print(f"gpudeck server status over SSH with {LAUNCHES} live launches: {len(counted.commands)} "
              f"command(s), {counted.connections} connection(s)")
        assert (counted.connections, len(counted.commands)) == (1, 1), counted.commands
    finally:
        (tmp_path / "go").touch()
