"""A launch whose host is down when the console starts is still followed: shown unknown while the
host does not answer, then reattached once it does, its end read from the wrapper's exit file.

Real sshd (tests/conftest.py): the launch starts over SSH, the sshd is stopped before a new
runtime starts, the server ends during the outage, the sshd comes back.
"""
from __future__ import annotations

import asyncio
import os
from pathlib import Path

from console.runtime import events as ev
from console.runtime.host_runtime import HostRuntime
from console.servers import lifecycle
from console.servers.unreached import why_unknown
from console.session import HostSession
from console.store import launches
from profiles import store
from tests.cli import gpudeck


async def until(test, timeout: float = 30.0, what: str = "the condition") -> None:
    """Until `test()` holds (each look is a file or memory read, not a clock assertion)."""
    try:
        async with asyncio.timeout(timeout):
            while not await asyncio.to_thread(test):
                await asyncio.sleep(0.05)
    except TimeoutError:
        raise AssertionError(f"timed out waiting for {what}") from None


async def test_a_launch_that_ends_while_its_host_is_down_gets_its_end_from_the_exit_file(
        scripts_profile, sshd, tmp_path):
    profile, scripts = scripts_profile
    go = tmp_path / "go"
    script = scripts / "short.sh"
    # the log claims health; the exit file (status 3) is what says how it ended
    script.write_text(f"#!/bin/sh\necho 'server is listening on http://127.0.0.1:1'\n"
                      f"while [ ! -e {go} ]; do sleep 0.1; done\nexit 3\n")
    script.chmod(0o755)
    session = HostSession.open(profile)
    try:
        record = await lifecycle.launch(session, "short", str(script))
    finally:
        await session.host.close()
    assert record.live and record.pgid

    sshd.stop()
    status = gpudeck("server", "status", "-p", profile.name)  # a one-shot look, before any console
    runtime = HostRuntime(HostSession.open(store.load(profile.name)), monitor_poll_s=0.2)
    ended = asyncio.Event()
    runtime.subscribe(lambda e: ended.set() if isinstance(e, ev.ServerStateChanged)
                      and e.record.id == record.id and not e.record.live else None)
    seen: dict = {}
    try:
        try:
            await runtime.start(gpus=False, servers=True, watch=False)
            await until(lambda: record.id in runtime.monitors, what="a monitor for the launch the host hid")
            watched = runtime.monitors[record.id].record
            on_disk = launches.get(profile.name, record.id)
            seen["shown"] = (watched.shown_state, on_disk.shown_state, on_disk.state)
            seen["why"] = why_unknown(watched)
            go.touch()  # the server ends while the host cannot be reached
            await until(lambda: Path(record.exit_file).exists(), what="the wrapper's exit file")
            seen["still"] = (runtime.monitors[record.id].record.shown_state,
                             launches.get(profile.name, record.id).shown_state)
        finally:
            sshd.start()
        await asyncio.wait_for(ended.wait(), 60)
    finally:
        await runtime.close()
        if not Path(record.exit_file).exists():  # the test failed before the server could end
            go.touch()

    lines = [line for line in status.stdout.splitlines() if line.startswith("short ")]
    assert status.returncode == 1 and len(lines) == 1 and " unknown " in lines[0], status.stdout
    assert "host not answering since " in lines[0] and "connection refused" in lines[0]
    assert seen["shown"] == ("unknown", "unknown", "loading"), "a launch its host hid was shown as current"
    assert seen["why"].startswith("host not answering since ") and "connection refused" in seen["why"]
    assert seen["still"] == ("unknown", "unknown"), "an ended launch was taken for ended before the host said so"
    final = launches.get(profile.name, record.id)
    assert final.state == "crashed" and final.exit_status == 3
    assert final.unreached is None and final.shown_state == "crashed"
    assert runtime.launches["short"].state == "crashed" and runtime.launches["short"].exit_status == 3
    assert os.path.exists(record.exit_file)


async def test_a_watched_launch_reads_unknown_while_its_host_drops_and_current_once_it_is_back(
        scripts_profile, sshd, tmp_path):
    profile, scripts = scripts_profile
    go = tmp_path / "go"
    script = scripts / "steady.sh"
    script.write_text(f"#!/bin/sh\necho loading model\nwhile [ ! -e {go} ]; do sleep 0.1; done\nexit 3\n")
    script.chmod(0o755)
    runtime = HostRuntime(HostSession.open(store.load(profile.name)), monitor_poll_s=0.2)
    shown: list[str] = []
    unknown, back, ended = asyncio.Event(), asyncio.Event(), asyncio.Event()

    def follow(e) -> None:
        if not isinstance(e, ev.ServerStateChanged) or e.record.config != "steady":
            return
        shown.append(e.record.shown_state)
        if e.record.shown_state == "unknown":
            unknown.set()
        elif unknown.is_set() and e.record.live:
            back.set()
        elif not e.record.live:
            ended.set()
    runtime.subscribe(follow)
    try:
        record = await lifecycle.launch(runtime.session, "steady", str(script))
        await runtime.start(gpus=False, servers=True, watch=False)
        await until(lambda: record.id in runtime.monitors, what="the launch watched")
        try:
            sshd.stop()
            await asyncio.wait_for(unknown.wait(), 30)
            why = why_unknown(runtime.monitors[record.id].record)
        finally:
            sshd.start()
        await asyncio.wait_for(back.wait(), 60)
        current = runtime.monitors[record.id].record.shown_state
        go.touch()
        await asyncio.wait_for(ended.wait(), 30)
    finally:
        go.touch()
        await runtime.close()
    assert why.startswith("host not answering since ")
    assert current == "loading" and launches.get(profile.name, record.id).unreached is None
    assert shown.index("unknown") < shown.index("loading", shown.index("unknown")) < len(shown) - 1
    final = launches.get(profile.name, record.id)
    assert final.state == "crashed" and final.exit_status == 3


def test_a_note_read_from_disk_is_checked_and_its_reason_made_safe():
    from console.safe_text import is_clean
    from console.store.launches import LaunchRecord
    from tests.hostile_text import HOSTILE

    base = {"id": "a-1", "config": "a", "state": "ready", "pgid": 7}
    assert LaunchRecord.from_doc(base | {"unreached": "junk"}).unreached is None  # the launch still reads
    record = LaunchRecord.from_doc(base | {"unreached": {"since": "soon", "error": "".join(HOSTILE)}})
    why = why_unknown(record)
    assert record.shown_state == "unknown" and why.startswith("host not answering since N/A: ")
    assert is_clean(why) and "\n" not in why
    record.state = "stopped"
    assert record.shown_state == "stopped" and why_unknown(record) == ""  # an ended launch's note says nothing
