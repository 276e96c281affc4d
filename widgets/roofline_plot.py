"""tok/s against batch on a log axis: both bounds as lines, measurements as points, older runs fainter.

The x values are drawn as log10(batch) on a linear axis with ticks labelled
by batch: plotext's own log scale rescales its data in place on every
render, which breaks when Textual renders the widget a second time.
"""
from __future__ import annotations

import math

from textual_plotext import PlotextPlot


def _lx(values) -> list[float]:
    return [math.log10(v) for v in values]


class RooflinePlot(PlotextPlot):
    DEFAULT_CSS = "RooflinePlot { height: 1fr; min-height: 12; width: 1fr; }"

    def show(self, batches: list[int], ideal: list[float], realistic: list[float],
             runs: list[tuple[str, list[tuple[int, float]]]]) -> None:
        """`runs` oldest first; the last one is the current measurement."""
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if not batches:
            plt.title("no roofline")
            self.refresh()
            return
        plt.title("tok/s against batch (both axes log)")
        plt.plot(_lx(batches), _lx(ideal), label="ideal", color="green", marker="braille")
        plt.plot(_lx(batches), _lx(realistic), label="realistic", color="yellow", marker="braille")
        plt.xticks(_lx(batches), [str(b) for b in batches])
        values = [v for v in ideal + realistic + [v for _, pts in runs for _, v in pts if v] if v and v > 0]
        lo, hi = math.floor(math.log10(min(values))), math.ceil(math.log10(max(values)))
        plt.yticks(list(range(lo, hi + 1)), [f"{10 ** e:g}" for e in range(lo, hi + 1)])
        for i, (name, points) in enumerate(runs):
            points = [(b, v) for b, v in points if b >= 1 and v is not None and v > 0]
            if not points:
                continue
            xs, ys = zip(*points)
            latest = i == len(runs) - 1
            plt.scatter(_lx(xs), _lx(ys), label=f"measured {name}" if latest else None,
                        color="cyan" if latest else "gray", marker="●" if latest else "·")
        self.refresh()
