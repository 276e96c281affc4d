"""The stop question counts the runs measured as the tab's title line does: both read the campaign's
owner ("measured 0 run(s)" once stood under "1/4 runs"). A visit under way is not yet a run done."""
from __future__ import annotations

import re

from console.campaign.spec import from_dict
from console.session import HostSession
from console.store import campaigns as st
from profiles import store
from profiles.profile import profile_from_dict
from tests.harness import HostApp, wait_until

LEVEL = {"concurrency": 1, "status": "ok", "completed": 8, "failed": 0, "output_throughput": 10.0,
         "ttft_p50": 40.0, "ttft_p99": 80.0, "tpot_p50": 10.0, "tpot_p99": 12.0}


async def test_stop_question_counts_runs_as_the_title_does(tmp_path):
    from screens.campaign_pane import CampaignPane
    from screens.confirm import Confirm

    store.save(profile_from_dict("box", {"transport": "local"}))
    spec = from_dict({"sweep": {"levels": [1], "repeats": 2}, "config": [{"name": "a"}, {"name": "b"}]})
    state = st.CampaignState(id=st.new_id("box"), profile="box", spec=spec.to_json(), cells=[
        st.Cell(name="a", base="a", status="sweeping", levels=[LEVEL]),  # its first visit, under way
        st.Cell(name="b", base="b", status="queued")], status="running", driver_pid=None)
    st.save(state)
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 45)) as pilot:
        title = app.pane.query_one("#camp-title")
        await wait_until(pilot, lambda: app.pane.state is not None and "cells" in str(title.render()),
                         what="the campaign title line")
        found = re.search(r"(\d+)/\d+ runs", str(title.render()))
        assert found, str(title.render())
        shown = int(found.group(1))
        assert shown == 0, str(title.render())  # the first visit has not ended
        app.pane.focus()
        await pilot.press("x")
        await wait_until(pilot, lambda: isinstance(app.screen, Confirm), 5, "the stop question")
        text = " ".join(str(w.render()) for w in app.screen.query("Static"))
        assert f"has measured {shown} run(s)" in text
        await pilot.press("n")
