"""The report's Campaigns section: each campaign's result table, its winner, and what each derived script ran."""
from __future__ import annotations

from pathlib import Path
from typing import Any

from profiles.atomic import write_atomic

from .sections import cell, code, fenced, table
from ..fmt import UNKNOWN


def derived_flags(state) -> list[list[str]]:
    """One row per grid cell: the flags its derived script passes, read back from the script kept with the results."""
    from ..store.campaigns import script_file
    from ..servers import launch

    rows = []
    for c in state.cells:
        if not c.flags:
            continue
        try:
            path = script_file(state, c.name)
            parsed = launch.parse_script(path.read_text(), name=path.name)
            passed = ", ".join(f"{flag} {parsed.raw_flags.get(flag.lstrip('-').replace('_', '-'), UNKNOWN)}"
                               for flag in c.flags)
        except (OSError, ValueError, launch.LaunchConfigError) as exc:
            passed = f"script not readable: {exc}"
        rows.append([cell(c.name), cell(c.base), cell(passed), cell(c.status)])
    return rows


def frontier_picture(state, roof, note: str, out_dir: Path | None) -> str:
    """The frontier as an SVG written beside the report, and the markdown that shows it; '' with nothing to draw."""
    from ..campaign.compare import compare
    from ..campaign.pareto import frontier, gpus_of
    from ..campaign.svg import render

    comp = compare(state, roof, note)
    slo = (state.spec.get("sweep") or {}).get("slo") or {}
    front = frontier(comp, gpus_of(roof), slo)
    if not front.points or out_dir is None:
        return ""
    name = f"{state.id}-frontier.svg"
    try:
        write_atomic(out_dir / name, render(front, title=f"{state.id}: {front.y_label} against {front.x_label}"))
    except OSError as exc:
        return f"Frontier picture not written: {cell(str(exc))}"
    on = ", ".join(f"{p.config} c={p.concurrency}" + (f" ({p.z:.3g} tok/J{', SIMULATED' if p.z_source == 'SIMULATED' else ''})"
                                                      if p.z is not None else "") for p in front.on_frontier)
    return (f"![{cell(state.id)} frontier]({name})\n\nOn the frontier (no other point is better on both "
            f"{front.x_label} and {front.y_label}): {cell(on)}. Bars are 95% CIs; tok/J is the third axis "
            "(N/A where power is unknown).")


def campaigns_section(profile: Any, out_dir: Path | None = None) -> str:
    from ..campaign import owner
    from ..campaign.compare import table_lines
    from ..roofline.from_profile import roofline_for
    from ..store import campaigns as campaign_state

    read = campaign_state.read_campaigns(profile.name)
    states, errors = read.records, [u.line for u in read.unreadable]
    if not states and not errors:
        return "No campaign has run on this host (`gpudeck campaign run FILE`)."
    roof, note = roofline_for(profile)
    parts = []
    for state in sorted(states, key=lambda s: s.created_at, reverse=True):
        parts.append(f"### {cell(state.id)}\n\n" + fenced(table_lines(state, roof, note, reading=owner.read(state))))
        picture = frontier_picture(state, roof, note, out_dir)
        if picture:
            parts.append(picture)
        rows = derived_flags(state)
        if rows:
            parts.append("Derived scripts (kept in " + code(state.dir / "scripts") + "), with the flags "
                         "each passes as read back from the script:\n\n"
                         + table(["cell", "base config", "script value of the grid flags", "state"], rows))
    for line in errors or []:
        parts.append(f"- unreadable campaign: {cell(line)}")
    return "\n\n".join(parts)
