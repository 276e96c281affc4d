"""The Campaign tab in a 100x30 split (a 26-row pane): every level column of the grid whole (the
note column and the names give way first), the frontier chart on screen under the answer, and
its legend telling two grid configs apart that differ only at their name's end."""
from __future__ import annotations

from console.campaign.spec import from_dict
from console.session import HostSession
from console.store import campaigns as st
from profiles import store
from profiles.profile import profile_from_dict
from tests.harness import HostApp, wait_until


PANE_AT_100x30 = (100, 27)  # the pane and a footer: the console less its header and tab strip
LEVELS = [1, 10, 64, 256]
NAMES = ("run_tp8_cds16", "run_tp8_ep8_memsafe", "run_tp8_ep8_crash",
         "run_tp8_cds16+cuda-graph-max-bs=32", "run_tp8_cds16+cuda-graph-max-bs=64")


def _rounds(tps: float) -> list[dict]:
    """Three repeats of a sweep over LEVELS, each level's throughput a little apart."""
    return [{"levels": [{"concurrency": c, "status": "ok", "completed": 8, "failed": 0,
                         "output_throughput": tps * c / 4 * (1 + 0.01 * r), "ttft_p50": 40.0, "ttft_p99": 80.0,
                         "tpot_p50": 10.0, "tpot_p99": 12.0} for c in LEVELS]} for r in range(3)]


def _saved_grid() -> None:
    store.save(profile_from_dict("box", {"transport": "local"}))
    spec = from_dict({"sweep": {"levels": LEVELS, "repeats": 3}, "config": [{"name": n} for n in NAMES]})
    cells = [st.Cell(name=n, base=n.split("+")[0], status="done", rounds=_rounds(40.0 - i)) for i, n in enumerate(NAMES)]
    cells[2].status, cells[2].crash_class = "crashed", "cuda-illegal-address"
    st.save(st.CampaignState(id=st.new_id("box"), profile="box", spec=spec.to_json(), cells=cells,
                             status="finished", driver_pid=None))


async def test_campaign_grid_levels_and_frontier_fit_100x30(tmp_path):
    from screens.campaign_pane import CampaignPane
    from widgets.campaign_frontier import CampaignFrontier
    from widgets.campaign_grid import CampaignGrid

    _saved_grid()
    app = HostApp(CampaignPane(), HostSession.open(store.load("box")))
    async with app.run_test(size=PANE_AT_100x30) as pilot:
        grid, plot = app.pane.query_one(CampaignGrid), app.pane.query_one(CampaignFrontier)
        await wait_until(pilot, lambda: app.pane.state is not None and grid.row_count == len(NAMES)
                         and app.pane.answered() and plot.region.height > 0, what="the saved campaign drawn and laid out")
        await pilot.pause()
        keys = [str(k.value) for k in grid.columns]
        upto = keys.index(f"c{LEVELS[-1]}") + 1
        used = sum(c.get_render_width(grid) for c in list(grid.columns.values())[:upto])
        assert used <= grid.scrollable_content_region.width, f"c={LEVELS[-1]} is cut: {keys}"
        screen = app.screen.region
        assert plot.region.height >= 10 and plot.region.bottom <= screen.bottom - 1, \
            f"the frontier at {plot.region} is off the {screen.size} screen"
        legend = str(app.pane.query_one("#camp-legend").render())
        for name in NAMES[3:]:
            assert name.rsplit("=", 1)[1] in legend  # each grid config's own part, not one shared prefix
