"""Rich texts for one GPU row: bars, sparkline, flag badges. Plain data in, Text out."""
from __future__ import annotations

from typing import Any, Sequence

from rich.text import Text

from console.gpus.model import known
from console.gpus.text import flag_label, gib

_EIGHTHS = " ▏▎▍▌▋▊▉█"
_SPARK = "▁▂▃▄▅▆▇█"

BADGE_STYLES = {
    "stale": "bold white on red",
    "orphan-memory": "bold black on yellow",
    "hot": "bold red",
    "throttled": "magenta",
    "busy": "green",
    "idle": "dim",
}


def bar(fraction: Any, width: int) -> str:
    if not known(fraction):
        return "·" * width
    fraction = max(0.0, min(1.0, float(fraction)))
    eighths = round(fraction * width * 8)
    full, rest = divmod(eighths, 8)
    text = "█" * full + (_EIGHTHS[rest] if rest else "")
    return text.ljust(width, "░" if full < width else " ")[:width]


def util_cell(util: Any, width: int = 10, stale: bool = False) -> Text:
    if not known(util):
        return Text("·" * width + "  N/A", style="dim")
    style = "red" if stale else ("green" if util >= 50 else "yellow" if util >= 5 else "dim green")
    return Text.assemble((bar(util / 100, width), style), f" {util:>3.0f}%")


def memory_cell(used: Any, total: Any, width: int = 9) -> Text:
    fraction = used / total if known(used) and known(total) and total else None
    label = f" {gib(used):>5}/{gib(total)}G"
    if fraction is None:
        return Text("·" * width + label, style="dim")
    style = "red" if fraction >= 0.95 else "cyan"
    return Text.assemble((bar(fraction, width), style), label)


def sparkline(values: Sequence[Any]) -> Text:
    out = Text()
    for value in values:
        if not known(value):
            out.append(" ")
        else:
            level = min(len(_SPARK) - 1, int(max(0.0, min(100.0, value)) / 100 * len(_SPARK)))
            out.append(_SPARK[level], style="red" if value >= 90 else "green" if value >= 20 else "dim")
    return out


def badges(flags: Sequence[str], throttle_reasons: Sequence[str] = ()) -> Text:
    out = Text()
    for flag in flags:
        if out:
            out.append(" ")
        label = flag_label(flag, list(throttle_reasons))
        out.append(f" {label} " if flag in ("stale", "orphan-memory") else label, style=BADGE_STYLES.get(flag, ""))
    return out


def temp_cell(temp: Any, hot: bool) -> Text:
    if not known(temp):
        return Text("N/A", style="dim")
    return Text(f"{temp:.0f}C", style="bold red" if hot else "")
