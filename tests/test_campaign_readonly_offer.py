"""A read-only console's Campaign tab offers no `r`: its empty-state line names the CLI instead (the
key is off there, and pressing it only says so)."""
from __future__ import annotations

from console.session import HostSession
from profiles import store
from profiles.profile import profile_from_dict
from tests.harness import HostApp, wait_until


async def test_readonly_campaign_tab_does_not_offer_r(tmp_path):
    from screens.campaign_pane import CampaignPane

    store.save(profile_from_dict("box", {"transport": "local"}))
    for readonly, offered in ((False, True), (True, False)):
        app = HostApp(CampaignPane(), HostSession.open(store.load("box"), readonly=readonly))
        async with app.run_test(size=(160, 45)) as pilot:
            title = app.pane.query_one("#camp-title")
            await wait_until(pilot, lambda: "no campaign yet" in str(title.render()), what="the empty campaign line")
            text = str(title.render())
            assert ("r runs" in text) is offered, text
            assert "gpudeck campaign run FILE -p box" in text
