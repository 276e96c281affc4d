"""The Campaign tab shows the new answers: tokens per joule per level (marked SIMULATED), invalid
repeats named, and each config's highest load within the SLO."""
from __future__ import annotations

from console.campaign.spec import from_dict
from console.session import HostSession
from console.store import campaigns as st
from profiles import store
from profiles.profile import profile_from_dict
from tests.harness import HostApp, wait_until
from tests.test_campaign_tab import _rounds


def _with_energy(rounds: list[dict], watts: float) -> list[dict]:
    for r in rounds:
        for lv in r["levels"]:
            lv["energy"] = {"tok_per_j": lv["output_throughput"] / watts, "avg_power_w": watts, "source": "SIMULATED"}
    return rounds


async def test_the_tab_shows_tokens_per_joule_invalid_repeats_and_the_highest_load():
    from screens.campaign_pane import CampaignPane

    store.save(profile_from_dict("box", {"transport": "local"}))
    spec = from_dict({"sweep": {"levels": [1, 4], "repeats": 3, "slo": {"ttft_ms": 100}},
                      "config": [{"name": "a"}, {"name": "b"}]})
    b = _with_energy(_rounds(10.0, 2), 900.0)
    b[2]["levels"][1].update(completed=5, failed=3)          # b's third repeat at c=4 lost requests
    state = st.CampaignState(id=st.new_id("box"), profile="box", spec=spec.to_json(), status="finished", cells=[
        st.Cell(name="a", base="a", status="done", rounds=_with_energy(_rounds(40.0, 1), 1200.0)),
        st.Cell(name="b", base="b", status="done", rounds=b)], driver_pid=None)
    st.save(state)
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=(160, 60)) as pilot:
        result = app.pane.query_one("#camp-result")
        await wait_until(pilot, lambda: app.pane.state is not None and "tok/J" in str(result.render()),
                         what="the saved campaign's answer drawn")
        lines = [" ".join(line.split()) for line in str(result.render()).splitlines()]
        assert any(line.startswith("a: tok/J c=1 0.00") and line.endswith(" (SIMULATED)") and "· c=4 0.03" in line
                   for line in lines), lines
        assert "b c=4 repeat 3: 3 of 8 requests failed" in lines
        assert "a: held at c=4 (the highest level swept)" in lines
