"""The header line: the current host and a chip per profile with its connection state."""
from __future__ import annotations

import time
from dataclasses import dataclass

from rich.text import Text
from textual.widgets import Static

from console.fmt import clock, duration
from console.safe_text import append_safe


@dataclass
class Chip:
    name: str
    target: str
    state: str  # connected | connecting | down | idle
    since: float
    error: str | None = None
    latency_ms: float | None = None
    simulated: bool = False
    current: bool = False
    crashed: str | None = None  # the crash class of a server of this host whose latest launch crashed


_DOT = {"connected": ("●", "green"), "connecting": ("◌", "yellow"), "down": ("○", "red"), "idle": ("○", "grey50")}


def chip_text(chip: Chip, now: float | None = None, full: bool = False) -> Text:
    now = time.time() if now is None else now
    dot, colour = _DOT.get(chip.state, ("?", "white"))
    text = Text()
    if full:
        append_safe(text, chip.name, style="bold")
        if chip.simulated:
            text.append(" ")
            text.append("SIMULATED", style="bold black on yellow")
        append_safe(text, f"  {chip.target}  ", style="grey70")
    else:
        append_safe(text, chip.name + " ", style="bold" if chip.current else "")
        if chip.simulated:  # every host showing simulated data says so, current or not
            text.append("SIM", style="bold black on yellow")
            text.append(" ")
    text.append(dot, style=colour)
    if full or chip.state != "connected":
        if chip.state == "connected":
            text.append(f" connected {duration(now - chip.since)}", style=colour)
            if chip.latency_ms is not None:
                text.append(f" · {chip.latency_ms:.0f} ms", style="grey70")
        elif chip.state == "down":
            text.append(" down since " + clock(chip.since), style=colour)
        elif chip.state == "connecting":
            text.append(" connecting", style=colour)
    if chip.crashed:
        text.append(f" ✖ {chip.crashed}", style="bold red")
    return text


class HostChips(Static):
    """Draws chips handed to it; never talks to a host."""

    DEFAULT_CSS = "HostChips { height: 1; padding: 0 1; background: $panel; }"

    def __init__(self, **kwargs) -> None:
        super().__init__("", **kwargs)
        self.chips: list[Chip] = []
        self.readonly = False
        self.clock = time.time  # what "connected 2m05s" counts from (a snapshot test pins it)
        self._drawn: Text | None = None

    def show(self, chips: list[Chip], readonly: bool = False) -> None:
        self.chips = chips
        self.readonly = readonly
        text = self.line_text()
        if text == self._drawn:
            return
        self._drawn = text
        # one line whatever it says (height 1, the full width): a repaint, never a new layout
        self.update(text, layout=False)

    def line_text(self) -> Text:
        now = self.clock()
        text = Text()
        text.append(" gpudeck ", style="bold black on dark_orange")
        text.append(" ")
        current = [c for c in self.chips if c.current]
        others = [c for c in self.chips if not c.current]
        for chip in current:
            text.append_text(chip_text(chip, now, full=True))
        for chip in others:
            text.append(" │ ", style="grey50")
            text.append_text(chip_text(chip, now))
        if self.readonly:
            text.append("   READ-ONLY", style="bold black on cyan")
        return text
