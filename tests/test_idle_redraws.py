"""An idle console redraws what changed and lays the screen out only when a size can change.

A sample a second that says what the last one said used to lay the whole
screen out several times (the process table shown and hidden again, the
"Processes" label and the status line set again); now the status line's new
age is a repaint and the rest is left alone. The numbers stay current: the
age still advances and a changed label is still drawn.
"""
from __future__ import annotations

from dataclasses import replace

from rich.text import Text
from textual.app import App
from textual.widget import Widget
from textual.widgets import Static

from console.gpus import parse_text
from screens.gpus_pane import GPUsPane
from tests.gpus_standin import FIXTURES
from tests.test_gpus_pane import PaneApp, local_profile, session_for, text_of
from widgets.gpu_processes import GPUProcessTable
from widgets.static_text import show


def _record_refreshes(monkeypatch) -> list[tuple[Widget, bool]]:
    """Every widget refresh from now on, with whether it asked for a new layout."""
    seen: list[tuple[Widget, bool]] = []
    original = Widget.refresh

    def refresh(self, *regions, repaint=True, layout=False, recompose=False):
        seen.append((self, bool(layout or recompose)))
        return original(self, *regions, repaint=repaint, layout=layout, recompose=recompose)

    monkeypatch.setattr(Widget, "refresh", refresh)
    return seen


async def test_a_sample_like_the_last_one_lays_nothing_out_and_its_age_still_moves(monkeypatch):
    snap = parse_text((FIXTURES / "table-8x-stale-after-crash.txt").read_text())
    app = PaneApp(None)
    async with app.run_test(size=(160, 45)) as pilot:
        pane = app.query_one(GPUsPane)
        pane.session = session_for(local_profile("box", ["x"]))
        snap.taken_at = pane.clock() - 42
        pane.show_snapshot(snap)
        await pilot.pause()
        procs, label, status = pane.query_one(GPUProcessTable), pane.query_one("#gpus-proc-label"), \
            pane.query_one("#gpus-status")
        assert not procs.display and "Processes  (none)" in text_of(label) and "42s ago" in text_of(status)

        seen = _record_refreshes(monkeypatch)
        pane.show_snapshot(replace(snap, taken_at=snap.taken_at + 30))   # the same GPUs, a later sample
        assert [w for w, layout in seen if layout] == []
        assert "12s ago" in text_of(status) and status in [w for w, _ in seen]   # the age: repainted
        assert label not in [w for w, _ in seen] and not procs.display

        pane.show_snapshot(replace(snap, taken_at=snap.taken_at + 31, processes_known=False))
        assert "unknown" in text_of(label)                                # what changed is drawn


class _One(App):
    CSS = "#auto { width: auto; }"

    def compose(self):
        yield Static("", id="auto")        # height and width from its text


async def test_show_skips_the_same_text_and_lays_out_only_when_the_size_can_change(monkeypatch):
    app = _One()
    async with app.run_test(size=(80, 10)) as pilot:
        widget = app.query_one("#auto", Static)
        assert show(widget, Text("age 1s"))
        await pilot.pause()
        seen = _record_refreshes(monkeypatch)
        assert not show(widget, Text("age 1s"))                   # the same text: nothing at all
        assert seen == []
        assert show(widget, Text("age 2s"))                       # the same width: a repaint
        assert seen == [(widget, False)]
        assert show(widget, Text("age 10s"))                      # wider: laid out again
        assert seen[-1] == (widget, True)
        assert show(widget, Text("age 10s", style="bold"))        # a new style is a change
        await pilot.pause()
        assert widget.size.width == len("age 10s")
