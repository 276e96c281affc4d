"""A run's timeline as a small standalone SVG for the report: three panels on one time axis.

Panels: the client's output tok/s with its requests in flight; the server's
KV cache % with its waiting requests; the server's GPUs' summed power. Each
line has its own scale, named with its top value in the panel's key. Levels
are grey lines labelled `c=N`; a first failure, a death, a hang and the
decisive log line are red lines, named in a numbered list under the chart.

Bounded: the picture has a fixed size, each series is thinned to at most
MAX_POINTS points and at most MAX_MARKS marks are drawn, so a ten-hour
sweep's picture is no larger than a ten-minute one's. Every text is escaped;
numbers are formatted, never interpolated raw.
"""
from __future__ import annotations

from html import escape

from ..bench.timeline_view import Line, TimelineData

WIDTH = 760
PANEL_H, GAP, TOP, LEFT, RIGHT = 110, 18, 30, 50, 20
MAX_POINTS = 400      # per series: more than the picture's width holds
MAX_MARKS = 40        # levels and events together
MARK_LINES = 8        # events listed under the chart
PANELS = (("tok/s", "in flight"), ("KV %", "waiting"), ("GPU W", None))
COLOURS = ("#1f77b4", "#d62728")


def _thin(points: list[tuple[float, float]], t0: float, t1: float) -> list[tuple[float, float]]:
    inside = [p for p in points if t0 <= p[0] <= t1]
    step = max(1, -(-len(inside) // MAX_POINTS))
    return inside[::step]


def render(data: TimelineData, title: str, t0: float = 0.0, t1: float | None = None) -> str:
    """The window [t0, t1] of the run (the whole run by default)."""
    t1 = data.span if t1 is None else t1
    t1 = max(t1, t0 + 1.0)
    width = WIDTH - LEFT - RIGHT
    marks = [m for m in data.marks if t0 <= m.t <= t1][:MAX_MARKS]
    events = sorted((m for m in marks if m.kind != "level-start"), key=lambda m: m.t)
    listed = events[:MARK_LINES]
    chart_h = TOP + len(PANELS) * (PANEL_H + GAP) + 20
    height = chart_h + 16 * len(listed) + (16 if len(events) > len(listed) else 0) + 10

    def sx(t: float) -> float:
        return LEFT + width * (t - t0) / (t1 - t0)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{height}" '
           f'viewBox="0 0 {WIDTH} {height}" font-family="sans-serif" font-size="11">',
           f'<title>{escape(title)}</title>',
           f'<rect x="0" y="0" width="{WIDTH}" height="{height}" fill="white"/>',
           f'<text x="{LEFT}" y="16" font-weight="bold">{escape(title)}</text>']
    for k, pair in enumerate(PANELS):
        top = TOP + k * (PANEL_H + GAP)
        out.append(f'<rect x="{LEFT}" y="{top}" width="{width}" height="{PANEL_H}" fill="none" stroke="#888"/>')
        key_x = LEFT + 6
        for line, colour in zip((data.lines[n] for n in pair if n), COLOURS):
            key_x = _line(out, line, colour, top, t0, t1, sx, key_x)
    bottom = TOP + len(PANELS) * (PANEL_H + GAP) - GAP
    for v in _ticks(t0, t1):
        out.append(f'<line x1="{sx(v):.1f}" y1="{bottom}" x2="{sx(v):.1f}" y2="{bottom + 4}" stroke="#888"/>'
                   f'<text x="{sx(v):.1f}" y="{bottom + 15}" text-anchor="middle">{v:g}</text>')
    out.append(f'<text x="{WIDTH - RIGHT}" y="{bottom + 15}" text-anchor="end">s since the run began</text>')
    number = {id(m): i + 1 for i, m in enumerate(listed)}
    for m in marks:
        level = m.kind == "level-start"
        colour = "#999" if level else "#c00"
        out.append(f'<line x1="{sx(m.t):.1f}" y1="{TOP}" x2="{sx(m.t):.1f}" y2="{bottom}" stroke="{colour}" '
                   f'stroke-dasharray="{"3,3" if level else "5,2"}"/>')
        label = m.label if level else str(number.get(id(m), ""))
        if label:
            out.append(f'<text x="{sx(m.t) + 2:.1f}" y="{TOP - 3}" fill="{colour}">{escape(label)}</text>')
    y = chart_h
    for i, m in enumerate(listed):
        out.append(f'<text x="{LEFT}" y="{y}" fill="#c00">{i + 1}. {m.t:.1f} s {escape(m.label)}: '
                   f'{escape(m.text[:110])}</text>')
        y += 16
    if len(events) > len(listed):
        out.append(f'<text x="{LEFT}" y="{y}">… and {len(events) - len(listed)} more</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"


def _line(out: list[str], line: Line, colour: str, top: float, t0: float, t1: float, sx, key_x: float) -> float:
    """One series in its panel, scaled to its own top; its key (name and top) at the panel's top left."""
    points = _thin(line.points, t0, t1)
    if not points:
        text = f"{line.unit}: not recorded"
        out.append(f'<text x="{key_x}" y="{top + 13}" fill="#666">{escape(text)}</text>')
        return key_x + 7 * len(text) + 16
    hi = max(v for _t, v in points) or 1.0

    def sy(v: float) -> float:
        return top + PANEL_H - (PANEL_H - 18) * v / hi

    path = " ".join(f"{sx(t):.1f},{sy(v):.1f}" for t, v in points)
    out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.3"/>')
    text = f"{line.unit}, top {hi:.4g}"
    out.append(f'<text x="{key_x}" y="{top + 13}" fill="{colour}">{escape(text)}</text>')
    return key_x + 6 * len(text) + 16


def _ticks(t0: float, t1: float, n: int = 6) -> list[float]:
    step = (t1 - t0) / n
    for nice in (1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 1800, 3600, 7200):
        if nice >= step:
            step = nice
            break
    first = -(-t0 // step) * step
    return [first + i * step for i in range(int((t1 - first) // step) + 1)]
