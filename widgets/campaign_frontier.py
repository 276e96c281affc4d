"""The campaign's frontier: tok/s per user against tok/s per GPU, one line per config, CI bars, SLO lines;
each point labelled with its output tokens per joule, the third axis (none where power is unknown).

Plain data in (`console.campaign.pareto.Frontier.to_json()`); it owns no I/O.
"""
from __future__ import annotations

from textual_plotext import PlotextPlot

from rich.text import Text

from console.fmt import middle_cut
from console.safe_text import clean_line

COLOURS = ("cyan", "red", "green", "magenta", "yellow", "blue", "orange", "white")


def frontier_legend(front: dict | None, width: int) -> Text:
    """`━ name` per config in its line's colour, names cut in the middle so that grid configs sharing
    a base stay apart, wrapped to `width`. Drawn over the chart: plotext's legend sat on the chart's
    top-left corner, where the low-concurrency points are."""
    points = (front or {}).get("points") or []
    configs = list(dict.fromkeys(p["config"] for p in points))
    text = Text()
    if not configs:
        return text
    room = max(16, min(40, width // min(len(configs), 3) - 3))
    for i, config in enumerate(configs):
        if i:
            text.append("  ")
        text.append("━ ", style=COLOURS[i % len(COLOURS)])
        text.append(middle_cut(clean_line(config), room))
    for line in front.get("slo_lines") or []:
        text.append("  ")
        text.append("· ", style="red")
        text.append(clean_line(line.get("label", "SLO")))
    return text


class CampaignFrontier(PlotextPlot):
    DEFAULT_CSS = "CampaignFrontier { height: 14; min-height: 10; width: 1fr; }"

    def show(self, front: dict | None) -> None:
        self.display = front is not None   # no campaign yet: no empty frame where its chart will be
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        points = (front or {}).get("points") or []
        if not points:
            plt.title("frontier: no level finished in every repeat yet")
            self.refresh()
            return
        energy = [p for p in points if isinstance(p.get("z"), (int, float))]
        simulated = any(p.get("z_source") == "SIMULATED" for p in energy)
        plt.title("frontier (● on it) · bars: 95% CI" + (
            f" · labels: tok/J{' (SIMULATED)' if simulated else ''}" if energy else " · tok/J N/A"))
        plt.xlabel(clean_line(front.get("x_label", "")))
        plt.ylabel(clean_line(front.get("y_label", "")))
        configs = list(dict.fromkeys(p["config"] for p in points))
        for i, config in enumerate(configs):
            colour = COLOURS[i % len(COLOURS)]
            mine = sorted((p for p in points if p["config"] == config), key=lambda p: p["concurrency"])
            xs, ys = [p["x"] for p in mine], [p["y"] for p in mine]
            plt.plot(xs, ys, color=colour, marker="braille")  # named in frontier_legend, over the chart
            for p in mine:
                if p.get("y_ci"):
                    plt.plot([p["x"], p["x"]], list(p["y_ci"]), color=colour, marker="braille")
                if p.get("x_ci"):
                    plt.plot(list(p["x_ci"]), [p["y"], p["y"]], color=colour, marker="braille")
            for p in mine:
                if isinstance(p.get("z"), (int, float)):
                    plt.text(f"{p['z']:.2g}", p["x"], p["y"], color=colour)
            on = [p for p in mine if p.get("frontier")]
            if on:
                plt.scatter([p["x"] for p in on], [p["y"] for p in on], color=colour, marker="●")
        xs = [p["x"] for p in points]
        for line in front.get("slo_lines") or []:
            plt.plot([0, max(xs)], [line["value"], line["value"]], color="red", marker="·")
        self.refresh()
