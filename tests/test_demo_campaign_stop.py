"""`x` then `y` on the demo's running campaign: it stops, its driver exits and is reaped by the
console that started it, and the header never reads `stopped ● driver running` (the walk saw it
stay so, with the driver a zombie)."""
from __future__ import annotations

import re
from pathlib import Path


from console.campaign import owner
from screens.app import GpudeckApp
from screens.confirm import Confirm
from tests.harness import wait_until

SHOWN_RUNNING = re.compile(r"(finished|stopped|failed)\s+● driver running")


async def test_a_stopped_campaigns_driver_is_reaped_and_never_shown_running(fast_demo_world):
    app = GpudeckApp(profile_name="demo", campaigns_end_on_quit={"demo"})
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, app.started.is_set, 30, what="the console started")
        await pilot.press("6")
        pane = app.panes["campaign"]
        await wait_until(pilot, lambda: pane.runtime is not None, 10, what="the Campaign tab on the demo host")
        pane.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: "started" in pane.message, 30, what="the campaign started")
        await wait_until(pilot, lambda: pane.state is not None and pane.seen is not None and pane.seen.driving
                         and pane.seen.current is not None, 60, what="a cell under way")
        pid = pane.state.driver_pid
        assert owner.driver_alive(pane.state)

        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 10, what="the stop question")
        await pilot.press("y")
        titles: list[str] = []

        def stopped_and_gone() -> bool:
            titles.append(str(pane.query_one("#camp-title").render()))
            return pane.state.status == "stopped" and not Path(f"/proc/{pid}").exists() \
                and "driver" not in titles[-1]
        await wait_until(pilot, stopped_and_gone, 90, what="the campaign stopped, its driver reaped and not shown")
        assert not [t for t in titles if SHOWN_RUNNING.search(t)], titles
        assert "stopped" in titles[-1] and pane.seen.driver == owner.ENDED
