"""Quitting the demo leaves nothing behind, even with servers running or still starting: no process
of the world outlives `Demo.close` (not one caught between the launch wrapper's fork and its
process group, nor one launched after the close began), and no file (each launch wrapper writes
`<log>.exit` a moment after its server is killed; the removal must not race it)."""
from __future__ import annotations

import asyncio
import os
import shutil
import signal
from pathlib import Path

from console import demo
from console.servers import configs as cfgs
from console.servers import lifecycle, pgid_file
from console.session import HostSession
from console.store import launches
from profiles import store


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as fh:
            return fh.read(1 << 20)
    except OSError:
        return b""


def world_processes(root: Path) -> dict[int, str]:
    """Every live process that points inside the demo's world: its working folder, its command or
    its environment (GPUDECK_HOME, PATH, the simulator's state folder) names a path under `root`.
    This test's own commands (its direct children, reaped by the host's threads) are left out."""
    mark = str(root).encode()
    me = os.getpid()
    found = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == me:
            continue
        stat = _read(f"/proc/{entry}/stat")
        fields = stat[stat.rfind(b")") + 2:].split()
        if len(fields) < 2 or fields[0] == b"Z" or int(fields[1]) == me:
            continue
        try:
            cwd = os.readlink(f"/proc/{entry}/cwd").encode()
        except OSError:
            cwd = b""
        cmdline = _read(f"/proc/{entry}/cmdline")
        if cwd.startswith(mark) or mark in cmdline or mark in _read(f"/proc/{entry}/environ"):
            found[int(entry)] = cmdline.replace(b"\0", b" ").decode(errors="replace")[:200]
    return found


def _end(found: dict[int, str]) -> None:
    """After a failed check: end what the world left (every pid here points inside this test's
    own temporary world), so one failure does not leak into the next test."""
    for pid in found:
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


async def test_close_with_running_servers_leaves_no_exit_file_and_no_process(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    for attempt in range(3):
        world = demo.setup(tmp_path / f"demo{attempt}")
        try:
            session = HostSession.open(store.load("demo"))
            configs = await cfgs.discover(session)
            assert configs, "the demo writes its launch scripts"
            launched = []
            for config in configs:
                launched.append(await lifecycle.launch(session, config.name, config.script, config.flags, config.port))
            assert all(r.pgid for r in launched)
            logs = {os.path.dirname(r.log) for r in launched}
            await session.host.close()
        finally:
            world.close()
        left = world_processes(world.root)
        _end(left)
        assert not left, left
        assert not world.root.exists(), sorted(str(p) for p in world.root.rglob("*"))
        assert all(not os.path.exists(d) for d in logs)


def _gate(folder: Path) -> tuple[Path, Path]:
    """A `setsid` first on PATH that holds the launch wrapper's server half between its fork and
    its process group: it says its pid on `arrived`, then waits until `release` is written (or
    it is killed). The wrapper's own start (no launch mark) goes straight through."""
    folder.mkdir()
    arrived, release = folder / "arrived", folder / "release"
    os.mkfifo(arrived)
    os.mkfifo(release)
    real = shutil.which("setsid")
    assert real, "setsid (util-linux) is needed by the launch wrapper"
    script = folder / "setsid"
    script.write_text("#!/bin/sh\n"
                      'if [ -n "$GPUDECK_LAUNCH_ID" ]; then\n'
                      f'  echo $$ > "{arrived}"\n'
                      f'  read _go < "{release}"\n'
                      "fi\n"
                      f'exec {real} "$@"\n')
    script.chmod(0o755)
    return arrived, release


async def _arrival(arrived: Path) -> int:
    """The pid the gate reports once the wrapper's server half reaches it."""
    fd = os.open(arrived, os.O_RDONLY | os.O_NONBLOCK)
    loop = asyncio.get_running_loop()
    ready = loop.create_future()
    loop.add_reader(fd, lambda: ready.done() or ready.set_result(None))
    try:
        await asyncio.wait_for(ready, 60)
        return int(os.read(fd, 64).decode().strip())
    finally:
        loop.remove_reader(fd)
        os.close(fd)


def _open_gate(release: Path) -> None:
    try:
        fd = os.open(release, os.O_WRONLY | os.O_NONBLOCK)
    except OSError:        # nobody waits there any more (killed, as it should be)
        return
    with os.fdopen(fd, "w") as fh:
        fh.write("go\n")


async def test_close_ends_a_launch_caught_between_the_wrappers_fork_and_its_process_group(tmp_path, monkeypatch):
    """The wrapper forks the server's half, which then makes its own process group. A close that
    lands in between finds no group under the launch's pid: the half must still be ended, or it
    goes on to start the server in a world that is gone (seen: a simulator alive 37 minutes
    later, re-writing the removed world's state file)."""
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    arrived, release = _gate(tmp_path / "gate")
    world = demo.setup(tmp_path / "demo")
    os.environ["PATH"] = f"{arrived.parent}{os.pathsep}{os.environ['PATH']}"
    session = HostSession.open(store.load("demo"))
    config = next(c for c in await cfgs.discover(session) if c.name == "run_tp8_ep8_memsafe")
    launch = asyncio.ensure_future(lifecycle.launch(session, config.name, config.script, config.flags, config.port))
    left: dict[int, str] = {}
    try:
        held = await _arrival(arrived)
        assert os.getpgid(held) != held, "the gate holds the server's half before its own group"
        (record,) = launches.load_all("demo")
        assert pgid_file.read_local(record.exit_file) is None, "no file names a group not made yet"
        world.close()
        left = world_processes(world.root)
    finally:
        launch.cancel()
        await asyncio.gather(launch, return_exceptions=True)
        await session.host.close()
        _end(left)
        _open_gate(release)
        world.close()
    assert held not in left and not left, left
    assert not world.root.exists(), sorted(str(p) for p in world.root.rglob("*"))


async def test_a_launch_still_on_its_way_when_the_demo_stops_starts_no_server(tmp_path, monkeypatch):
    """The console quits while a launch is still on its way (its record saved, its wrapper not
    started yet: the stop read no group for it). The wrapper runs after the stop; its server
    half finds the world's launch permit revoked and starts nothing."""
    from console.sim.state import state_path

    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "unused"))
    world = demo.setup(tmp_path / "demo")
    session = HostSession.open(store.load("demo"))
    left: dict[int, str] = {}
    try:
        config = next(c for c in await cfgs.discover(session) if c.name == "run_tp8_cds16")
        world.stop()
        record = await lifecycle.launch(session, config.name, config.script, config.flags, config.port)
        exit_file = Path(record.exit_file)
        for _ in range(600):           # the wrapper writes the exit status once its half has ended
            if exit_file.exists():
                break
            await asyncio.sleep(0.05)
        assert exit_file.read_text().strip() == "95"
        assert "not started: the launch permit" in Path(record.log).read_text()
        assert not state_path(world.state_dir).exists(), "the simulator never ran"
    finally:
        await session.host.close()
        world.close()
        left = world_processes(world.root)
        _end(left)
    assert not left, left


def test_close_points_this_process_back_where_it_was(tmp_path, monkeypatch):
    """`demo.setup` points GPUDECK_HOME, PATH and the simulator's state folder at the world; once the
    world is removed, nothing in this process's environment may still name it."""
    monkeypatch.setenv("GPUDECK_HOME", str(tmp_path / "mine"))
    monkeypatch.setenv("PATH", os.environ["PATH"])
    monkeypatch.delenv("GPUDECK_SIM_STATE_DIR", raising=False)
    before = {name: os.environ.get(name) for name in demo.WORLD_ENV}
    world = demo.setup(tmp_path / "demo")
    assert all(str(world.root) in os.environ[name] for name in demo.WORLD_ENV)
    world.close()
    assert {name: os.environ.get(name) for name in demo.WORLD_ENV} == before
    assert "GPUDECK_SIM_STATE_DIR" not in os.environ
