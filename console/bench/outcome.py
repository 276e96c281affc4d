"""What a level's outcome means, in words: one rule for the Bench tab's note column and the CLI's table.

A level that is not plainly ok carries the facts of why in its summary (the
server stopped, died, was stopping or hung; the operator stopped the sweep;
the SSH link was lost; an earlier level failed; requests failed). The notes
come most telling first: the Bench tab shows the first, `gpudeck bench` all.
A server's own end explains the failed requests, so they are not listed then.
"""
from __future__ import annotations


def level_notes(summary: dict | None) -> list[str]:
    """Why a level is not plainly ok, one line each, most telling first (empty: nothing to say)."""
    s = summary or {}
    notes = []
    if s.get("server_stopped"):
        notes.append(str(s["server_stopped"].get("message")))
    elif s.get("server_died"):
        notes.append(f"server died: {s['server_died'].get('message')}")
    elif s.get("server_stopping"):
        notes.append(str(s["server_stopping"].get("message")))
    elif s.get("server_hung"):
        notes.append(str(s["server_hung"].get("message")))
    server_end = bool(notes)
    if s.get("stopped"):
        unsent = f", {s['not_sent']} not sent" if s.get("not_sent") else ""
        notes.append(f"stopped by the operator{unsent}")
    if s.get("link_lost") and s.get("status") == "interrupted":
        notes.append(f"interrupted (link lost): {s['link_lost'].get('message') or 'SSH link lost'}")
    elif (s.get("interrupted_attempt") or {}).get("link_lost"):
        notes.append(f"rerun after the link returned ({s['interrupted_attempt']['link_lost'].get('message')})")
    if s.get("skipped_because"):
        notes.append(f"skipped: {s['skipped_because']}")
    if s.get("errors") and not server_end:
        notes.append("; ".join(map(str, s["errors"][:2])))
    return notes
