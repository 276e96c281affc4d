"""Chart level labels and the legend never draw over each other: comparing two runs on the Bench
tab put plotext's legend in the chart's top-left corner, on the rows of the level labels (seen as
`sweep-2026120c=250219` at 100x30). The Campaign frontier's legend is its own line too."""
from __future__ import annotations

import pytest
from textual.widgets import Static

from screens.bench_pane import BenchPane
from tests.harness import wait_until
from tests.test_bench_pane import DIED, OK, BenchApp, saved_run
from widgets.bench_chart import BenchChart
from widgets.campaign_frontier import CampaignFrontier, frontier_legend

EARLIER, LATER = "sweep-20261129-100000", "sweep-20261129-110000"


@pytest.mark.parametrize("size", [(100, 30), (160, 45)])
async def test_bench_chart_labels_and_legend_apart(size):
    saved_run(DIED, EARLIER)
    saved_run(OK, LATER)
    app = BenchApp()
    async with app.run_test(size=size) as pilot:
        pane = app.query_one(BenchPane)
        await wait_until(pilot, lambda: pane.view.run_id == LATER, what="the latest run")
        pane.compare_with(str(saved_run(DIED, EARLIER)))
        await wait_until(pilot, lambda: pane.has_class("comparing"), 10, "the comparison")
        chart = pane.query_one(BenchChart)
        await wait_until(pilot, lambda: pane._charted is not None and pane._charted[2] == EARLIER,
                         what="both runs drawn")
        await pilot.pause()
        assert chart.display and chart.region.height >= 6, "the chart of the runs is on screen"
        plot = chart.render().plain
        # every level's label whole, and no run name among them: the plot area is the labels' alone
        for label in ("c=1", "c=2", "c=4"):
            assert label in plot, f"{label} drawn over in\n{plot}"
        assert "sweep-" not in plot, f"a legend inside the chart, where the labels go:\n{plot}"
        legend = pane.query_one("#bp-legend", Static)
        # the legend names both runs whole, on its own rows, above the chart
        assert legend.display and legend.region.height >= 1
        assert legend.region.bottom <= chart.region.y
        line = str(legend.render())
        assert LATER in line and EARLIER in line


def test_frontier_legend_is_not_drawn_in_the_plot():
    """The frontier's tok/J labels have the plot to themselves: configs are named on a line of their own."""
    front = {"x_label": "tok/s per user", "y_label": "tok/s per GPU", "slo_lines": [],
             "points": [{"config": name, "concurrency": c, "x": 100 / c + i, "y": 10 * c + i, "z": 0.5 * c,
                         "frontier": True} for i, name in enumerate(["run_tp8_a", "run_tp8_b"])
                        for c in (1, 2, 4)]}
    chart = CampaignFrontier()
    chart.show(front)
    chart.plt.plotsize(100, 14)
    plot = chart.plt.build()
    assert "run_tp8" not in plot
    assert "run_tp8_a" in frontier_legend(front, 100).plain and "run_tp8_b" in frontier_legend(front, 100).plain
