"""The report's Campaigns section: each campaign's result table, its winner, and what each derived script ran."""
from __future__ import annotations

from typing import Any

from .sections import cell, fenced, table


def derived_flags(state) -> list[list[str]]:
    """One row per grid cell: the flags its derived script passes, read back from the script kept with the results."""
    from ..campaign.state import script_file
    from ..servers import launch

    rows = []
    for c in state.cells:
        if not c.flags:
            continue
        try:
            path = script_file(state, c.name)
            parsed = launch.parse_script(path.read_text(), name=path.name)
            passed = ", ".join(f"{flag} {parsed.raw_flags.get(flag.lstrip('-').replace('_', '-'), 'N/A')}"
                               for flag in c.flags)
        except (OSError, ValueError, launch.LaunchConfigError) as exc:
            passed = f"script not readable: {exc}"
        rows.append([cell(c.name), cell(c.base), cell(passed), cell(c.status)])
    return rows


def campaigns_section(profile: Any) -> str:
    from ..campaign import state as campaign_state
    from ..campaign.compare import roofline_for, table_lines

    states, errors = campaign_state.list_all(profile.name)
    if not states and not errors:
        return "No campaign has run on this host (`gpudeck campaign run FILE`)."
    roof, note = roofline_for(profile)
    parts = []
    for state in sorted(states, key=lambda s: s.created_at, reverse=True):
        parts.append(f"### {cell(state.id)}\n\n" + fenced(table_lines(state, roof, note)))
        rows = derived_flags(state)
        if rows:
            parts.append("Derived scripts (kept in `" + cell(str(state.dir / "scripts")) + "`), with the flags "
                         "each passes as read back from the script:\n\n"
                         + table(["cell", "base config", "script value of the grid flags", "state"], rows))
    for line in errors or []:
        parts.append(f"- unreadable campaign: {cell(line)}")
    return "\n\n".join(parts)
