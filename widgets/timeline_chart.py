"""Two of a run's timeline series on one time axis (left and right scales), with its marks as lines.

Plain data in (`console.bench.timeline_view.TimelineData`); it owns no I/O.
Levels are yellow lines labelled `c=N` on alternating rows; a first failure,
a death, a hang and the decisive log line are red, labelled at the foot.
"""
from __future__ import annotations

from textual_plotext import PlotextPlot

from console.bench.timeline_view import TimelineData
from console.safe_text import clean_line

LEFT, RIGHT = "cyan", "magenta"


class TimelineChart(PlotextPlot):
    DEFAULT_CSS = "TimelineChart { height: 1fr; min-height: 8; width: 1fr; }"

    def show(self, data: TimelineData | None, view: int = 0) -> None:
        plt = self.plt
        plt.clear_data()
        plt.clear_figure()
        if data is None:
            plt.title("no timeline")
            self.refresh()
            return
        left_name, right_name = data.views[view % len(data.views)]
        left = data.lines[left_name]
        right = data.lines[right_name] if right_name else None
        span = max(data.span, 1.0)
        plt.xlim(0, span)
        plt.xlabel("s since the run began")
        tops = {}
        for line, color, side in ((left, LEFT, "left"), (right, RIGHT, "right")):
            if line is None or not line.points:
                continue
            xs, ys = zip(*line.points)
            tops[side] = max(max(ys), 1.0)
            plt.plot(list(xs), list(ys), color=color, marker="braille", yside=side)
        plt.title(clean_line(f"{left.unit} (cyan, left) · " + (
            f"{right.unit} (magenta, right)" if right else "")))
        top = tops.get("left", 1.0)
        plt.ylim(0, top * 1.15, yside="left")
        if "right" in tops:
            plt.ylim(0, tops["right"] * 1.15, yside="right")
        levels = [m for m in data.marks if m.kind == "level-start"]
        for k, m in enumerate(levels):
            plt.vline(m.t, "yellow")
            plt.text(clean_line(m.label), m.t + span * 0.005, top * (1.1 if k % 2 == 0 else 1.0), color="yellow",
                     alignment="left")
        for m in data.marks:
            if m.kind == "level-start":
                continue
            plt.vline(m.t, "red")
            plt.text(clean_line(m.label), m.t, top * 0.05, color="red", alignment="right")
        self.refresh()
