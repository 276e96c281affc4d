"""Quitting the demo leaves nothing behind, even with servers running: each launch wrapper writes
`<log>.exit` a moment after its server is killed, and the removal must not race it."""
from __future__ import annotations

import os

from console import demo
from console.servers import configs as cfgs
from console.servers import lifecycle
from console.session import HostSession
from profiles import store


async def test_close_with_running_servers_leaves_no_exit_file(tmp_path, monkeypatch):
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
        assert not world.root.exists(), sorted(str(p) for p in world.root.rglob("*"))
        assert all(not os.path.exists(d) for d in logs)
