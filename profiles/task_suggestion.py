"""Suggested tasks: what an event (a crash, a failed sweep level, a poor
efficiency) proposes the operator should do next.

These functions only build suggestions from plain records; `TaskBoard.suggest`
stores them until the operator accepts or dismisses each one.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from datetime import datetime
from typing import Any

from .task_model import PRIORITIES


@dataclass(frozen=True)
class Suggestion:
    key: str              # stable: the same event always gives the same key
    text: str
    kind: str             # crash | sweep | efficiency | promise
    priority: str = "high"
    crash: str | None = None
    run: str | None = None
    config: str | None = None
    created: str = ""

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def suggestion_from_dict(doc: Any) -> Suggestion:
    if not isinstance(doc, dict) or not isinstance(doc.get("key"), str) or not isinstance(doc.get("text"), str):
        raise ValueError("a suggestion needs a string key and text")
    fields = {k: doc.get(k) for k in ("kind", "priority", "crash", "run", "config", "created")}
    for name, value in fields.items():
        if value is not None and not isinstance(value, str):
            raise ValueError(f"suggestion {doc['key']}: {name} must be a string")
    if fields["priority"] not in (None, *PRIORITIES):
        raise ValueError(f"suggestion {doc['key']}: bad priority {fields['priority']!r}")
    return Suggestion(key=doc["key"], text=doc["text"], kind=fields["kind"] or "other",
                      priority=fields["priority"] or "high", crash=fields["crash"],
                      run=fields["run"], config=fields["config"], created=fields["created"] or "")


def suggestion_to_dict(s: Suggestion) -> dict[str, Any]:
    return {k: v for k, v in asdict(s).items() if v not in (None, "")}


def _clock(stamp: Any) -> str | None:
    """'14:02' from an ISO time, in the clock the record was written with."""
    if not isinstance(stamp, str):
        return None
    try:
        return datetime.fromisoformat(stamp.replace("Z", "+00:00")).strftime("%H:%M")
    except ValueError:
        return None


def crash_suggestion(crash: dict[str, Any], record: str | None = None) -> Suggestion | None:
    """'Investigate cuda-illegal-address in tp8-ep8-memsafe (14:02)', linked to the record."""
    if not isinstance(crash, dict):
        return None
    kind = crash.get("class") or "a crash"
    config = crash.get("config") or "the server"
    when = _clock(crash.get("time"))
    text = f"Investigate {kind} in {config}" + (f" ({when})" if when else "")
    # one key per crash record, whether it is named by its id or by its file name
    record = record[:-5] if record and record.endswith(".json") else record
    key = f"crash:{record}" if record else f"crash:{config}:{crash.get('time')}:{kind}"
    return Suggestion(key=key, text=text, kind="crash", priority="high", crash=record,
                      config=crash.get("config") if isinstance(crash.get("config"), str) else None)


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


def level_problem(level: dict[str, Any]) -> str | None:
    """'failed' or 'partial' for a sweep level that needs a rerun, else None."""
    status = level.get("status")
    failed = _num(level.get("failed"))
    if level.get("stopped"):
        return None  # the operator stopped it: nothing failed that a rerun would fix
    if status in ("failed", "error", "aborted"):
        return "failed"
    if status == "partial" or (status == "ok" and failed):
        return "partial"
    return None


def sweep_suggestions(run: dict[str, Any], run_name: str) -> list[Suggestion]:
    """One suggestion per failed or partial level of a stored benchmark run."""
    out: list[Suggestion] = []
    levels = run.get("levels") if isinstance(run, dict) else None
    for level in levels if isinstance(levels, list) else []:
        if not isinstance(level, dict):
            continue
        problem = level_problem(level)
        if problem is None:
            continue
        conc = level.get("concurrency")
        done, failed = level.get("completed"), level.get("failed")
        counts = f"{done if done is not None else '?'} done, {failed if failed is not None else '?'} failed"
        out.append(Suggestion(
            key=f"sweep:{run_name}:{conc}", kind="sweep", priority="high", run=run_name,
            text=f"Rerun concurrency {conc} of {run_name}: {problem} ({counts})"))
    return out


def efficiency_suggestion(label: str, efficiency_pct: float | None, threshold_pct: float | None,
                          run: str | None = None, config: str | None = None,
                          key: str | None = None) -> Suggestion | None:
    """A suggestion when a measured efficiency falls below the operator's threshold.

    `key` says what it is offered once for (e.g. once per run); by default the label."""
    eff, limit = _num(efficiency_pct), _num(threshold_pct)
    if eff is None or limit is None or eff >= limit:
        return None
    return Suggestion(key=key or f"efficiency:{label}", kind="efficiency", priority="medium", run=run,
                      config=config,
                      text=f"Efficiency {eff:.1f}% at {label} is below {limit:g}%: find where the time goes")


def promise_suggestion(config: str, warning: str) -> Suggestion | None:
    """A config whose name promises what its flags don't do (named EP8, runs TP8): check it once."""
    if not config or not warning:
        return None
    return Suggestion(key=f"promise:{config}", kind="promise", priority="medium", config=config,
                      text=f"Check {config}: {warning}")
