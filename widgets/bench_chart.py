"""Output tok/s, one point a second, with the start of each level marked; an earlier run in grey."""
from __future__ import annotations

from rich.text import Text
from textual_plotext import PlotextPlot

from console.safe_text import clean_line

THIS_RUN, EARLIER_RUN = "cyan", "gray"  # the two lines' colours (plotext's names)
LEGEND_STYLES = {THIS_RUN: "cyan", EARLIER_RUN: "grey50"}  # the same colours in the legend (Rich's names)


def chart_legend(this_run: str, earlier: str | None) -> Text:
    """`━ name` for each run in its line's colour, drawn on its own line above the chart: plotext's
    legend sat in the chart's top-left corner, on the rows where the level labels go, and the two
    drew over each other (`sweep-2026120c=250219`). Empty when one run alone is drawn."""
    text = Text()
    if not earlier:
        return text
    text.append("━ ", style=LEGEND_STYLES[THIS_RUN])
    text.append(clean_line(this_run))
    text.append("  ━ ", style=LEGEND_STYLES[EARLIER_RUN])
    text.append(clean_line(earlier))
    return text


class BenchChart(PlotextPlot):
    # the chart gives way first when the pane is short: the level table keeps its rows
    DEFAULT_CSS = "BenchChart { height: 1fr; min-height: 6; width: 1fr; }"  # all the room the table leaves

    def show(self, series: list[float], boundaries: list[tuple[int, int | str]],
             overlay: tuple[str, list[float], list[tuple[int, int | str]]] | None = None,
             ) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        plt.title("output tok/s (client)")
        plt.xlabel("s")
        top = max([*series, *(overlay[1] if overlay else []), 1.0])
        if overlay and overlay[1]:
            _, points, _ = overlay
            # named in chart_legend, above the chart: no legend inside it, where the level labels go
            plt.plot(list(range(1, len(points) + 1)), points, color=EARLIER_RUN, marker="braille")
        if series:
            plt.plot(list(range(1, len(series) + 1)), series, color=THIS_RUN, marker="braille")
        else:
            plt.xlim(0, 10)
        span = max(len(series), len(overlay[1]) if overlay else 0, 10)
        per_char = span / max(10, (self.size.width or 80) - 12)  # the x units one character of the plot takes
        for k, (x, name) in enumerate(boundaries):
            plt.vline(x + 0.5, "yellow")
            # The whole label, starting at its level's line (plotext centres text by default), on
            # alternating rows, so a short level's neighbour does not draw over it ("c=2" for c=256).
            # A label that would run off the right edge (a level that died at once) ends at its line.
            text = name if isinstance(name, str) else f"c={name}"
            right = x + 0.6 + len(text) * per_char > span
            plt.text(text, x + (0.4 if right else 0.6), top * (1.0 if k % 2 == 0 else 0.88), color="yellow",
                     alignment="right" if right else "left")
        plt.ylim(0, top * 1.1)
        self.refresh()
