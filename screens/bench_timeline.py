"""A run's timeline over the Bench tab: two series at a time on one time axis, `v` for the next two.

The data comes read and shaped (console.bench.timeline_view), from the
Bench tab's `t`; this screen only draws it and cycles the pair shown. Under
the chart: the marks other than level starts (failure, death, decisive line),
in time order with their times and text, one line each, then the series the
run did not record.
"""
from __future__ import annotations

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Static

from console.bench.timeline_view import TimelineData
from console.safe_text import safe_text
from widgets.timeline_chart import TimelineChart

MARK_ROWS = 3     # the mark lines under the chart, at most (the chart keeps the rest of a 30-row terminal)


class TimelineScreen(ModalScreen[None]):
    BINDINGS = [Binding("escape,q,t", "dismiss(None)", "close"), Binding("v", "next_view", "next series")]
    DEFAULT_CSS = """
    TimelineScreen { align: center middle; }
    TimelineScreen > Vertical { width: 100%; height: 100%; background: $surface; padding: 0 1; }
    TimelineScreen #tl-head { height: 1; text-style: bold; }
    TimelineScreen #tl-marks { height: auto; max-height: 4; text-wrap: nowrap; text-overflow: ellipsis; }
    TimelineScreen #tl-keys { height: 1; color: $text-muted; }
    """

    def __init__(self, data: TimelineData) -> None:
        super().__init__()
        self.data = data
        self.view = 0

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Static("", id="tl-head", markup=False)
            yield TimelineChart()
            yield Static("", id="tl-marks", markup=False)
            yield Static("v next series · Esc close", id="tl-keys", markup=False)

    def on_mount(self) -> None:
        self._draw()

    def action_next_view(self) -> None:
        self.view = (self.view + 1) % len(self.data.views)
        self._draw()

    def shown(self) -> tuple[str, str | None]:
        return self.data.views[self.view]

    def _draw(self) -> None:
        data = self.data
        left, right = self.shown()
        self.query_one("#tl-head", Static).update(safe_text(
            f"timeline of {data.run_id or 'the run'} · {left}" + (f" and {right}" if right else "")
            + f" · {self.view + 1}/{len(data.views)} · {data.span:.0f} s"))
        self.query_one(TimelineChart).show(data, self.view)
        events = sorted((m for m in data.marks if m.kind != "level-start"), key=lambda m: m.t)
        lines = [f"{m.t:7.1f} s  {m.label}: {m.text}" for m in events[:MARK_ROWS]]
        if len(events) > MARK_ROWS:
            lines[-1] = lines[-1] + f"  (+{len(events) - MARK_ROWS} more)"
        missing = data.missing()
        lines.append("not recorded: " + ", ".join(missing) if missing else "")
        self.query_one("#tl-marks", Static).update(safe_text("\n".join(ln for ln in lines if ln), newlines=True))
