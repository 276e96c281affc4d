"""A profile's `[model]` edited on disk while the console runs is read again by the Server tab's R."""
from __future__ import annotations

from console.session import HostSession
from profiles import store
from profiles.profile import profile_from_dict
from screens.server_pane import ServerPane
from tests.harness import HostApp, wait_until


async def test_r_on_the_server_tab_reads_a_new_model_section(gpudeck_home):
    store.save(profile_from_dict("box", {"transport": "local", "model": {"name": "old-model"}}))
    session = HostSession.open(store.load("box"))
    app = HostApp(ServerPane(id="pane-server"), session)
    async with app.run_test(size=(150, 45)) as pilot:
        pane = app.query_one(ServerPane)
        await wait_until(pilot, lambda: pane.runtime is not None, what="the pane's runtime")
        store.save(profile_from_dict("box", {"transport": "local", "model": {"name": "new-model",
                                                                               "config": "/m/config.json"}}))
        pane.action_reload()  # what R runs
        await wait_until(pilot, lambda: pane.runtime.session.profile.model.name == "new-model",
                         what="the edited [model] read again")
        assert pane.runtime.session.profile.model.config == "/m/config.json"


async def test_reopening_a_host_reads_a_new_model_section(gpudeck_home):
    from screens.app import GpudeckApp

    for name in ("a", "b"):
        store.save(profile_from_dict(name, {"transport": "local", "model": {"name": "old-model"}}))
    app = GpudeckApp(profile_name="a")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, lambda: app.current == "a", what="host a open")
        await app.switch_host("b")
        store.save(profile_from_dict("a", {"transport": "local", "model": {"name": "new-model"}}))
        await app.switch_host("a")
        assert app.fleet.runtime("a").session.profile.model.name == "new-model"
