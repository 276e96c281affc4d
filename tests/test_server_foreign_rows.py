"""A server the console did not start gets a row on the Server tab; when that process goes, its
row goes too at the next re-check, instead of reading '● running' for as long as the tab is open."""
from __future__ import annotations

import subprocess
import sys

import screens.server_pane as server_pane
from profiles import store
from profiles.profile import profile_from_dict
from screens.app import GpudeckApp
from tests.harness import wait_until


async def _until(pilot, predicate, seconds=20.0, what="the condition"):
    await wait_until(pilot, predicate, seconds, what)


async def test_a_gone_foreign_server_loses_its_row(gpudeck_home, monkeypatch):
    monkeypatch.setattr(server_pane, "UNMANAGED_EVERY_S", 0.5)
    store.save(profile_from_dict("local", {"transport": "local"}))
    # looks like a vLLM server to `ps` (its arguments say so), started by someone else
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "vllm serve", "fake-model"],
                            start_new_session=True)
    key = f"pid:{proc.pid}"
    try:
        app = GpudeckApp(profile_name="local")
        async with app.run_test(size=(100, 30)) as pilot:
            await pilot.press("2")
            table = app.panes["server"].query_one("#configs")
            pane = app.panes["server"]
            await _until(pilot, lambda: key in table.rows, what=f"the foreign row {list(table.rows)} "
                         f"{[p.pid for p in pane.unmanaged]} {pane.query_one('#loghead').render()}")
            proc.kill()
            proc.wait()
            await _until(pilot, lambda: key not in table.rows, what="the row to go")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


async def test_a_hidden_server_tab_lists_no_processes_and_looks_again_when_shown(gpudeck_home, monkeypatch):
    """Each look is a `ps` on the host, and its rows are all it feeds: none while the tab is hidden."""
    from console.runtime.host_runtime import HostRuntime

    monkeypatch.setattr(server_pane, "UNMANAGED_EVERY_S", 0.05)
    ticks, looks = [], []
    tick, look = server_pane.ServerPane._recheck_unmanaged, HostRuntime.unmanaged_now

    def counted_tick(self):
        ticks.append(self.is_mounted)
        return tick(self)

    async def counted_look(self):
        looks.append(self.name)
        return await look(self)

    monkeypatch.setattr(server_pane.ServerPane, "_recheck_unmanaged", counted_tick)
    monkeypatch.setattr(HostRuntime, "unmanaged_now", counted_look)
    store.save(profile_from_dict("local", {"transport": "local"}))
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(120)", "vllm serve", "fake-model"],
                            start_new_session=True)
    key = f"pid:{proc.pid}"
    try:
        app = GpudeckApp(profile_name="local")
        async with app.run_test(size=(100, 30)) as pilot:
            await app.started.wait()
            await _until(pilot, lambda: len(ticks) >= 10, what="ten re-check ticks")  # the GPUs tab on screen
            assert looks == []
            await pilot.press("2")
            table = app.panes["server"].query_one("#configs")
            await _until(pilot, lambda: looks and key in table.rows, what="a look once shown, and the row")
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
