"""The Bench form's last settings per profile, and the largest sweep a host has seen.

An operator who restarts the console finds the form as they left it, not
reset to a 512-stream default; and a sweep larger than any run before on
that host is asked about first (`larger_than_before`).
"""
from __future__ import annotations

import json

from profiles.atomic import write_atomic
from profiles.paths import profile_data_dir

from .results import list_runs

KEPT = ("url", "levels", "input_len", "output_len", "num_prompts", "model", "api", "request_rate",
        "max_concurrency", "shared_prefix_len", "dataset", "temperature", "burstiness", "range_ratio",
        "api_key_env")


def _path(profile: str):
    return profile_data_dir(profile) / "bench-form.json"


def load(profile: str) -> dict:
    """The saved values (only the known keys, only strings); {} when none or unreadable."""
    try:
        doc = json.loads(_path(profile).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return {}
    if not isinstance(doc, dict):
        return {}
    return {k: v for k, v in doc.items() if k in KEPT and isinstance(v, str)}


def save(profile: str, values: dict) -> None:
    doc = {k: str(values[k]) for k in KEPT if values.get(k) not in (None, "")}
    try:
        write_atomic(_path(profile), json.dumps(doc, indent=2) + "\n")
    except OSError:
        pass  # a read-only data dir: the form still works, it is just not remembered


def largest_level(levels_text: str) -> int | None:
    """The largest concurrency of a form's levels, or None when it can't be read (the generator says why)."""
    try:
        levels = [int(p) for p in levels_text.replace(" ", "").split(",") if p]
    except ValueError:
        return None
    return max(levels) if levels else None


def largest_before(profile: str) -> int:
    """The largest concurrency any saved run of this profile (its host) ran; 0 when none."""
    best = 0
    for run in list_runs(profile):
        for c in run.get("levels") or []:
            if isinstance(c, int) and c > best:
                best = c
    return best


def larger_than_before(profile: str, levels_text: str) -> tuple[int, int] | None:
    """(new largest, previous largest) when this sweep goes beyond every run before; else None."""
    new = largest_level(levels_text)
    if new is None:
        return None
    before = largest_before(profile)
    return (new, before) if new > before else None
