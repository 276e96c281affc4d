"""The report's first section: what a team reads in one screen before the details.

The answer (the newest campaign's verdict with its interval), the crashes by class, the ceiling
and how far the measured run is from it. Each line points at the section below that holds the
details; nothing here is worked out differently from there (the campaign's `compare`, the store's
compared run, the roofline's levels).
"""
from __future__ import annotations

from collections import Counter
from typing import Any

from .sections import cell, efficiency_pct, num


def _answer(profile: Any) -> str:
    from ..campaign.compare import compare
    from ..roofline.from_profile import roofline_for
    from ..store import campaigns as campaign_state

    states = campaign_state.read_campaigns(profile.name).records
    if not states:
        return "no campaign has run on this host, so no config is compared with an interval (see Benchmark runs)"
    state = max(states, key=lambda s: s.created_at)
    roof, note = roofline_for(profile)
    label, names, rest = compare(state, roof, note).verdict()
    return f"{cell(state.id)}: {cell(label + names + rest)}"


def _crashes(crashes: list[dict[str, Any]]) -> str:
    docs = [c["doc"] for c in crashes if isinstance(c.get("doc"), dict)]
    unreadable = len(crashes) - len(docs)
    if not docs:
        return "none recorded" + (f" ({unreadable} record(s) unreadable)" if unreadable else "")
    classes = Counter(str(d.get("class") or "unclassified") for d in docs)
    configs = sorted({str(d.get("config")) for d in docs if d.get("config")})
    text = ", ".join(f"{n} × {cell(k)}" for k, n in classes.most_common())
    text += f" (configs: {', '.join(cell(c) for c in configs)})" if configs else ""
    return text + (f"; {unreadable} record(s) unreadable" if unreadable else "")


def _ceiling(roof: dict[str, Any] | None, note: str | None, measured: dict[int, tuple[float, str]]) -> str:
    if roof is None:
        return f"not worked out: {cell(note)}"
    ideal = roof.get("ideal") if isinstance(roof.get("ideal"), dict) else {}
    text = f"ideal single stream {num(ideal.get('single_stream_tok_s'))} tok/s"
    best = None
    for level in roof.get("levels") or []:
        if not isinstance(level, dict) or not isinstance(level.get("batch"), int):
            continue
        got = measured.get(level["batch"])
        pct = efficiency_pct(got[0], level.get("tok_s_ideal")) if got else None
        if got and pct is not None and (best is None or got[0] > best[1]):
            best = (level["batch"], got[0], level.get("tok_s_ideal"), pct, got[1])
    if best is None:
        return text + "; no measured level to set against it"
    batch, tok_s, tok_ideal, pct, run = best
    return (text + f"; best measured {num(tok_s, 2)} tok/s at batch {batch} against an ideal {num(tok_ideal)} "
            f"= {pct:.1f}% efficiency (run {cell(run)})")


def summary_section(profile: Any, crashes: list[dict[str, Any]], roof: dict[str, Any] | None,
                    roof_note: str | None, measured: dict[int, tuple[float, str]]) -> str:
    return "\n".join([
        f"- **Answer:** {_answer(profile)}. Details: Campaigns.",
        f"- **Crashes:** {_crashes(crashes)}. Details: Crashes.",
        f"- **Ceiling and efficiency:** {_ceiling(roof, roof_note, measured)}. Details: Roofline.",
    ])
