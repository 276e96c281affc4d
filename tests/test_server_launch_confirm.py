"""`l` on the Server tab asks first, as `k` does, naming what will run: an `l` pressed by accident
(a config with no warning, the log focused) started a server."""
from __future__ import annotations

import shlex

from textual.widgets import Static

from screens.app import GpudeckApp
from screens.confirm import Confirm
from tests.harness import wait_until
from widgets.log_view import LogView


def _dialog_text(screen: Confirm) -> str:
    return "\n".join(str(s.render()) for s in screen.query(Static))


async def test_l_asks_first_shows_the_command_and_launches_only_on_y(demo_world, monkeypatch):
    monkeypatch.setenv("GPUDECK_SIM_STARTUP_S", "0.3")
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(160, 45)) as pilot:
        server = app.panes["server"]
        await pilot.press("2")
        await wait_until(pilot, lambda: len(server.configs) == 3, what="configs")
        config = server._selected_config()
        assert config is not None and not config.warnings  # a config with nothing to warn about
        log = server.query_one(LogView)
        app.set_focus(log)
        await wait_until(pilot, lambda: app.focused is log, what="the log focused")

        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the launch confirmation")
        shown = _dialog_text(app.screen)
        assert config.script in shown, shown
        assert shlex.join(config.parsed.argv) in shown, shown
        await pilot.press("escape")
        await wait_until(pilot, lambda: not isinstance(app.screen, Confirm), what="Esc closing the question")
        await wait_until(pilot, lambda: not [w for w in app.workers if w.node is server and w.group == "action"],
                         what="the launch action ended")
        assert config.name not in server.latest  # nothing launched

        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the launch confirmation again")
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, Confirm), what="n closing the question")
        await wait_until(pilot, lambda: not [w for w in app.workers if w.node is server and w.group == "action"],
                         what="the launch action ended")
        assert config.name not in server.latest

        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the launch confirmation once more")
        await pilot.press("y")
        await wait_until(pilot, lambda: config.name in server.latest, what="y launching the config")
        await wait_until(pilot, lambda: server.latest[config.name].state == "ready", what="the launch ready")
