"""Which runs' timelines the report draws, and the SVG files written beside it (console.report.timeline_svg).

The newest MAX_PICTURES runs that recorded a timeline get one picture each:
where a level failed, the window from the start of the level before the first
failed one to the run's end (what led up to it, then the failure); otherwise
the whole run. A run without a timeline (from before timelines) gets none.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any

from profiles.atomic import StateFileError, write_atomic

from .sections import cell

MAX_PICTURES = 5


def window(data, failed: list[int]) -> tuple[float, float]:
    """(t0, t1) to draw: around the first failed level when one failed, else the whole run."""
    starts = [m.t for m in data.marks if m.kind == "level-start"]
    if not failed or not starts:
        return 0.0, data.span
    first = min(failed)
    before = max(0, first - 1)
    return (starts[before] if before < len(starts) else 0.0), data.span


def timeline_pictures(runs: list[dict[str, Any]], out_dir: Path | None) -> dict[str, str]:
    """Run name -> the markdown that shows its timeline picture (the SVG written into `out_dir`)."""
    from ..bench.timeline_view import chart_data
    from ..store.timeline import read_timeline
    from .timeline_svg import render

    if out_dir is None:
        return {}
    shown: dict[str, str] = {}
    for run in reversed(runs):       # newest first
        if len(shown) >= MAX_PICTURES:
            break
        if run.get("error") or not run.get("path"):
            continue
        try:
            tl = read_timeline(run["path"])
        except StateFileError as exc:
            shown[run["name"]] = f"Timeline not readable: {cell(str(exc))}"
            continue
        if tl is None:
            continue
        data = chart_data(tl, run["name"])
        levels = run["doc"].get("levels") if isinstance(run.get("doc"), dict) else None
        failed = [i for i, lv in enumerate(levels or []) if isinstance(lv, dict) and lv.get("status") == "failed"]
        t0, t1 = window(data, failed)
        what = "the failed level and the one before it" if failed else "the whole run"
        name = f"{run['name']}-timeline.svg"
        try:
            write_atomic(out_dir / name, render(data, f"{run['name']}: {what}", t0, t1))
        except OSError as exc:
            shown[run["name"]] = f"Timeline picture not written: {cell(str(exc))}"
            continue
        shown[run["name"]] = (f"![{cell(run['name'])} timeline]({name})\n\nTimeline ({what}): client tok/s and "
                              "requests in flight, the server's KV cache % and waiting requests, the GPUs' power; "
                              f"every series with its own scale. All series: `gpudeck bench show {run['name']} --json`.")
    return shown
