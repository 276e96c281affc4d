"""The Campaign tab: the answer right under the grid, the frontier drawn, `x` asks first, no stale 'keeps running'."""
from __future__ import annotations

import random

from console.store import campaigns as st
from console.campaign.spec import from_dict
from console.session import HostSession
from profiles import store
from profiles.profile import profile_from_dict
from tests.harness import HostApp, wait_until


def _rounds(tps: float, seed: int) -> list[dict]:
    rng = random.Random(seed)
    out = []
    for _ in range(3):
        levels = []
        for c in (1, 4):
            rate = tps * c / 4 * (1 + rng.gauss(0, 0.05))
            levels.append({"concurrency": c, "status": "ok", "completed": 8, "failed": 0,
                           "output_throughput": rate, "ttft_p50": 40.0, "ttft_p99": 80.0,
                           "tpot_p50": 10.0, "tpot_p99": 12.0})
        out.append({"levels": levels})
    return out


def _saved(status: str = "running") -> st.CampaignState:
    store.save(profile_from_dict("box", {"transport": "local"}))
    spec = from_dict({"sweep": {"levels": [1, 4], "repeats": 3}, "config": [{"name": "a"}, {"name": "b"}]})
    state = st.CampaignState(id=st.new_id("box"), profile="box", spec=spec.to_json(), cells=[
        st.Cell(name="a", base="a", status="done", rounds=_rounds(40.0, 1)),
        st.Cell(name="b", base="b", status="done", rounds=_rounds(10.0, 2))], status=status, driver_pid=None)
    st.save(state)
    return state


async def test_the_answer_sits_under_the_grid_and_the_frontier_is_drawn(tmp_path):
    from screens.campaign_pane import CampaignPane
    from widgets.campaign_frontier import CampaignFrontier
    from widgets.campaign_grid import CampaignGrid

    _saved("finished")
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 45)) as pilot:
        grid, result = app.pane.query_one(CampaignGrid), app.pane.query_one("#camp-result")
        plot = app.pane.query_one(CampaignFrontier)
        # the saved campaign is read off the UI thread; its grid, result and plot are laid out after
        await wait_until(pilot, lambda: app.pane.state is not None and str(result.render()).startswith("winner")
                         and grid.region.height > 0 and result.region.height > 0 and plot.region.height > 0,
                         what="the saved campaign drawn and laid out")
        assert result.region.y - (grid.region.y + grid.region.height) <= 1   # no screenful of blank rows between
        text = str(result.render())
        assert text.startswith("winner: a at ") and "(CI " in text and "bootstrap" in text
        assert plot.region.height >= 10 and plot.region.y > result.region.y


async def test_x_asks_before_stopping_a_campaign(tmp_path):
    from screens.campaign_pane import CampaignPane
    from screens.confirm import Confirm

    _saved("running")
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    stops = []
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: app.pane.state is not None, 5, "the saved campaign")

        async def stop_campaign(campaign_id):
            stops.append(campaign_id)
            return 4242
        app.pane.runtime.stop_campaign = stop_campaign
        app.pane.focus()
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 5, "the question")
        await pilot.press("n")
        await wait_until(pilot, lambda: "not stopped" in app.pane.message, 5, "the answer no")
        assert stops == []
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 5, "the question again")
        await pilot.press("y")
        await wait_until(pilot, lambda: stops, 5, "the stop")
        assert "asked" in app.pane.message


async def test_a_finished_campaign_no_longer_says_it_keeps_running(tmp_path):
    from screens.campaign_pane import CampaignPane

    state = _saved("running")
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 45)) as pilot:
        await wait_until(pilot, lambda: app.pane.state is not None, 5, "the saved campaign")
        app.pane._say("started x (driver pid 1); it keeps running if the console closes", while_running=True)
        assert "keeps running" in str(app.pane.query_one("#camp-title").render())
        state.status = "finished"
        app.pane.state = state
        app.pane.draw()
        assert "keeps running" not in str(app.pane.query_one("#camp-title").render())
        assert "leading so far" not in str(app.pane.query_one("#camp-result").render())


def test_campaign_list_says_driver_gone_for_a_running_campaign_without_its_driver():
    import json

    from tests.cli import gpudeck

    state = _saved("running")
    out = gpudeck("campaign", "list", "-p", "box", timeout=240)
    line = next(line for line in out.stdout.splitlines() if line.startswith(state.id))
    assert "running (driver gone" in line and "leading so far: a" in line
    listed = json.loads(gpudeck("campaign", "list", "-p", "box", "--json", timeout=240).stdout)["campaigns"]
    assert listed[0]["driver_gone"] is True and listed[0]["winner"] is None and listed[0]["leader"] == "a"


async def test_no_campaign_yet_draws_no_empty_frontier_frame(tmp_path):
    """Before any campaign the tab says how to start one; the frontier's frame appears with a campaign."""
    from console.session import HostSession
    from profiles import store
    from profiles.profile import profile_from_dict
    from screens.campaign_pane import CampaignPane
    from tests.harness import HostApp, wait_until
    from widgets.campaign_frontier import CampaignFrontier

    store.save(profile_from_dict("empty", {"transport": "local"}))
    app = HostApp(CampaignPane(), HostSession.open(store.load("empty")))
    async with app.run_test(size=(160, 45)) as pilot:
        title = app.pane.query_one("#camp-title")
        await wait_until(pilot, lambda: "no campaign yet" in str(title.render()), 10, "the empty-tab line")
        assert not app.pane.query_one(CampaignFrontier).display
