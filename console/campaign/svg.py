"""The frontier as a small standalone SVG: a picture for the report without a plotting library.

Axes, each config's points joined across levels with 95% CI bars, the
frontier as a dashed line, the SLO lines, and a legend naming each config.
Every text is escaped; numbers are formatted, never interpolated raw.
"""
from __future__ import annotations

from html import escape

from .pareto import Frontier

WIDTH, HEIGHT = 720, 440
LEFT, RIGHT, TOP, BOTTOM = 70, 200, 20, 50
COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b", "#e377c2", "#17becf")


def _ticks(hi: float, n: int = 5) -> list[float]:
    if hi <= 0:
        return [0.0]
    step = hi / n
    magnitude = 10 ** len(str(int(step))) / 10 if step >= 1 else 0.1
    nice = next((m * magnitude for m in (1, 2, 2.5, 5, 10) if m * magnitude >= step), step)
    return [i * nice for i in range(int(hi / nice) + 2)]


def render(front: Frontier, title: str = "") -> str:
    pts = front.points
    x_hi = max([p.x_ci[1] if p.x_ci else p.x for p in pts] or [1.0]) * 1.05 or 1.0
    y_vals = [p.y_ci[1] if p.y_ci else p.y for p in pts] + [s["value"] for s in front.slo_lines]
    y_hi = max(y_vals or [1.0]) * 1.05 or 1.0
    xt, yt = _ticks(x_hi), _ticks(y_hi)
    x_hi, y_hi = max(x_hi, xt[-1]), max(y_hi, yt[-1])
    pw, ph = WIDTH - LEFT - RIGHT, HEIGHT - TOP - BOTTOM

    def sx(v: float) -> float:
        return LEFT + pw * v / x_hi

    def sy(v: float) -> float:
        return TOP + ph * (1 - v / y_hi)

    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{WIDTH}" height="{HEIGHT}" '
           f'viewBox="0 0 {WIDTH} {HEIGHT}" font-family="sans-serif" font-size="11">',
           f'<title>{escape(title or "throughput against interactivity")}</title>',
           f'<rect x="0" y="0" width="{WIDTH}" height="{HEIGHT}" fill="white"/>',
           f'<rect x="{LEFT}" y="{TOP}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>']
    for v in xt:
        if v <= x_hi:
            out.append(f'<line x1="{sx(v):.1f}" y1="{TOP + ph}" x2="{sx(v):.1f}" y2="{TOP + ph + 4}" stroke="#888"/>'
                       f'<text x="{sx(v):.1f}" y="{TOP + ph + 16}" text-anchor="middle">{v:g}</text>')
    for v in yt:
        if v <= y_hi:
            out.append(f'<line x1="{LEFT - 4}" y1="{sy(v):.1f}" x2="{LEFT}" y2="{sy(v):.1f}" stroke="#888"/>'
                       f'<text x="{LEFT - 6}" y="{sy(v) + 4:.1f}" text-anchor="end">{v:g}</text>')
    out.append(f'<text x="{LEFT + pw / 2}" y="{HEIGHT - 12}" text-anchor="middle">{escape(front.x_label)}</text>')
    out.append(f'<text x="16" y="{TOP + ph / 2}" text-anchor="middle" '
               f'transform="rotate(-90 16 {TOP + ph / 2})">{escape(front.y_label)}</text>')
    for s in front.slo_lines:
        y = sy(s["value"])
        out.append(f'<line x1="{LEFT}" y1="{y:.1f}" x2="{LEFT + pw}" y2="{y:.1f}" stroke="#c00" '
                   f'stroke-dasharray="2,3"/><text x="{LEFT + pw - 4}" y="{y - 4:.1f}" text-anchor="end" '
                   f'fill="#c00">{escape(s["label"])}</text>')
    for i, config in enumerate(front.configs()):
        colour = COLOURS[i % len(COLOURS)]
        mine = sorted((p for p in pts if p.config == config), key=lambda p: p.concurrency)
        if len(mine) > 1:
            path = " ".join(f"{sx(p.x):.1f},{sy(p.y):.1f}" for p in mine)
            out.append(f'<polyline points="{path}" fill="none" stroke="{colour}" stroke-width="1.5"/>')
        for p in mine:
            if p.x_ci:
                out.append(f'<line x1="{sx(p.x_ci[0]):.1f}" y1="{sy(p.y):.1f}" x2="{sx(p.x_ci[1]):.1f}" '
                           f'y2="{sy(p.y):.1f}" stroke="{colour}"/>')
            if p.y_ci:
                out.append(f'<line x1="{sx(p.x):.1f}" y1="{sy(p.y_ci[0]):.1f}" x2="{sx(p.x):.1f}" '
                           f'y2="{sy(p.y_ci[1]):.1f}" stroke="{colour}"/>')
            out.append(f'<circle cx="{sx(p.x):.1f}" cy="{sy(p.y):.1f}" r="{4 if p.frontier else 2.5}" '
                       f'fill="{colour}"><title>{escape(config)} c={p.concurrency}</title></circle>')
        ly = TOP + 14 + 16 * i
        out.append(f'<rect x="{LEFT + pw + 12}" y="{ly - 8}" width="10" height="10" fill="{colour}"/>'
                   f'<text x="{LEFT + pw + 26}" y="{ly + 1}">{escape(config[:26])}</text>')
    edge = front.on_frontier
    if len(edge) > 1:
        path = " ".join(f"{sx(p.x):.1f},{sy(p.y):.1f}" for p in edge)
        out.append(f'<polyline points="{path}" fill="none" stroke="black" stroke-dasharray="6,4"/>')
    ly = TOP + 14 + 16 * len(front.configs())
    out.append(f'<line x1="{LEFT + pw + 12}" y1="{ly - 3}" x2="{LEFT + pw + 22}" y2="{ly - 3}" stroke="black" '
               f'stroke-dasharray="3,2"/><text x="{LEFT + pw + 26}" y="{ly + 1}">frontier</text>')
    out.append("</svg>")
    return "\n".join(out) + "\n"
