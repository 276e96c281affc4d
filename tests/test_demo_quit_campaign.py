"""`gpudeck demo`: its campaign ends with the demo, so the Campaign tab says so and q asks first."""
from __future__ import annotations


from console.campaign import owner
from screens.app import GpudeckApp
from screens.confirm import Confirm
from tests.harness import wait_until


async def test_q_asks_before_the_demo_ends_its_running_campaign(fast_demo_world):
    app = GpudeckApp(profile_name="demo", campaigns_end_on_quit={"demo"})   # as `gpudeck demo` builds it
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, app.started.is_set, 30, what="the console started")
        await pilot.press("6")
        pane = app.panes["campaign"]
        await wait_until(pilot, lambda: pane.runtime is not None, 10, what="the Campaign tab on the demo host")
        pane.focus()
        await pilot.press("r")
        await wait_until(pilot, lambda: "started" in pane.message, 30, what="the campaign started")
        title = str(pane.query_one("#camp-title").render())
        assert "ends when the demo is quit" in title and "keeps running" not in title
        await wait_until(pilot, lambda: pane.runtime.campaign is not None
                         and owner.driver_alive(pane.runtime.campaign), 30, what="the driver running")

        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 10, what="the question before quitting")
        question = " ".join(app.screen.lines)
        assert "Quitting the demo ends it" in question and pane.runtime.campaign.id in question
        await pilot.press("q")   # a second q while asked closes the question (q closes the top layer): no
        await wait_until(pilot, lambda: not isinstance(app.screen, Confirm), 10, what="the question gone")
        assert not [s for s in app.screen_stack if isinstance(s, Confirm)]   # never a second question
        assert app.is_running and owner.driver_alive(pane.runtime.campaign)   # nothing ended
        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 10, what="the question asked again")
        await pilot.press("n")
        await wait_until(pilot, lambda: not isinstance(app.screen, Confirm), 10, what="the question gone")
        assert app.is_running and owner.driver_alive(pane.runtime.campaign)   # nothing ended

        await pilot.press("q")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 10, what="the question again")
        await pilot.press("y")
        await wait_until(pilot, lambda: not app.is_running, 10, what="the console to quit")
