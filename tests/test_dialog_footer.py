"""A dialog's footer names the dialog's keys: at 100x30 the launch question was drawn over the
Server tab's footer (`l launch  k kill  d diff …`), keys the question does not take."""
from __future__ import annotations

from textual.widgets import Footer

from screens.app import GpudeckApp
from screens.confirm import Confirm
from screens.host_switcher import HostSwitcher
from tests.harness import wait_until


def dialog_keys(app) -> dict[str, str]:
    """The keys drawn in the footer of the screen on top, key → words."""
    footers = list(app.screen.query(Footer))
    return {str(k.key): str(k.description) for f in footers for k in f.query("FooterKey") if k.display}


async def test_the_launch_question_shows_its_own_keys(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        await pilot.press("2")
        await wait_until(pilot, lambda: getattr(app.focused, "id", None) == "configs", what="the config list")
        await pilot.press("l")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), what="the launch question")
        await wait_until(pilot, lambda: "yes" in dialog_keys(app).values(), what="the question's keys")
        keys = dialog_keys(app)
        assert keys.get("y") == "yes" and "cancel" in keys.values()
        assert not {"l", "k", "d", "a"} & set(keys), keys          # no tab key under the question
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, Confirm), what="the question closed")


async def test_the_host_switcher_shows_its_own_keys(demo_world):
    app = GpudeckApp(profile_name="demo")
    async with app.run_test(size=(100, 30)) as pilot:
        await wait_until(pilot, app.started.is_set, what="the console started")
        await pilot.press("H")
        await wait_until(pilot, lambda: isinstance(app.screen, HostSwitcher), what="the host switcher")
        await wait_until(pilot, lambda: "add host" in dialog_keys(app).values(), what="the switcher's keys")
        assert "close" in dialog_keys(app).values() and "1-6 tabs" not in " ".join(dialog_keys(app).values())
