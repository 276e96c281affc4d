"""Prometheus API answers read as hostile input: each series' shape checked, bad ones counted.

Whatever answers at a Prometheus URL (a broken proxy, an exporter's bug, a
hostile peer) can send a result without `value`, labels that are lists,
targets whose labels are not a mapping, numbers written as objects. The
answer as a whole must be of the kind asked for (`AnswerShapeError`
otherwise); inside it each series is checked on its own, and a bad one is
skipped and counted, so one broken series costs one line ("3 series
unreadable"), never the view.

After these checks labels are `dict[str, str]` and values are floats (NaN
and infinities included: Prometheus writes them, and the readers show them as
N/A).
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

MAX_NUMBER_TEXT = 64     # a sample value longer than this is not a number Prometheus writes
_join = "".join


class AnswerShapeError(ValueError):
    """The answer as a whole is not what was asked for (a matrix for an instant query, no result list)."""


@dataclass
class Counted:
    """What an answer held that could be read, and how many series could not."""

    rows: list = field(default_factory=list)
    unreadable: int = 0


def labels_of(value: Any) -> dict[str, str] | None:
    """A label set: a mapping of text to text, or None."""
    if not isinstance(value, dict) or not all(isinstance(k, str) for k in value):
        return None
    return value if _all_text(value) else None


def _all_text(value: dict) -> bool:
    # a decoded JSON object's keys are text by the grammar: only the values can be anything.
    # Joining them is the quickest whole check (it refuses anything that is not text), once per series.
    try:
        _join(value.values())
    except TypeError:
        return False
    return True


def number(value: Any) -> float | None:
    """A sample value as Prometheus writes it (text such as "12.5", "NaN", "+Inf") or a plain number."""
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        if len(value) > MAX_NUMBER_TEXT:
            return None
        try:
            return float(value)
        except ValueError:
            return None
    if isinstance(value, (int, float)):
        try:
            return float(value)
        except OverflowError:
            return None
    return None


def point(pair: Any) -> tuple[float, float] | None:
    """[time, value] -> (time, value); the time must be a finite number."""
    if not isinstance(pair, (list, tuple)) or len(pair) != 2:
        return None
    at, value = number(pair[0]), number(pair[1])
    if at is None or value is None or not math.isfinite(at):
        return None
    return at, value


def _results(data: Any, kind: str, asked: str) -> list:
    if not isinstance(data, dict) or data.get("resultType") != kind or not isinstance(data.get("result"), list):
        raise AnswerShapeError(f"unexpected answer to {asked}")
    return data["result"]


def vector(data: Any) -> Counted:
    """An instant query's `data` -> rows of (labels, value, evaluation time)."""
    return vector_items(instant_results(data))


def instant_results(data: Any) -> list:
    """An instant query's `data` -> its list of results, each still to be checked (`vector_items`)."""
    return _results(data, "vector", "an instant query")


def vector_items(items: list) -> Counted:
    """An instant query's results -> rows of (labels, value, evaluation time).

    Runs once per series of a fleet every second: the common shape (text
    labels, `[time, "number"]`) takes the short path, anything else the
    checks of `labels_of` and `point`."""
    out = Counted()
    append = out.rows.append
    isfinite, join = math.isfinite, _join
    finite_at = None     # an instant query's rows share one evaluation time: checked once
    for item in items:
        if type(item) is dict:
            labels, pair = item.get("metric"), item.get("value")
            if type(labels) is dict and type(pair) is list and len(pair) == 2:
                at, text = pair
                if type(text) is str and type(at) is float and len(text) <= MAX_NUMBER_TEXT \
                        and (at == finite_at or isfinite(at)):
                    try:
                        join(labels.values())     # every label value is text, or TypeError
                        append((labels, float(text), at))
                    except (TypeError, ValueError):
                        out.unreadable += 1
                    finite_at = at
                    continue
        labels = labels_of(item.get("metric", {})) if isinstance(item, dict) else None
        sample = point(item.get("value")) if isinstance(item, dict) else None
        if labels is None or sample is None:
            out.unreadable += 1
            continue
        append((labels, sample[1], sample[0]))
    return out


def matrix(data: Any) -> Counted:
    """A range query's `data` -> rows of (labels, [(time, value), ...]); a series with one bad point is skipped."""
    out = Counted()
    for item in _results(data, "matrix", "a range query"):
        labels = labels_of(item.get("metric", {})) if isinstance(item, dict) else None
        values = item.get("values") if isinstance(item, dict) else None
        points = [point(p) for p in values] if isinstance(values, list) else None
        if labels is None or points is None or any(p is None for p in points):
            out.unreadable += 1
            continue
        out.rows.append((labels, points))
    return out


def targets(data: Any) -> Counted:
    """The targets API's `data` -> rows of {"labels": {...}, "scrapeInterval": text}."""
    items = data.get("activeTargets") if isinstance(data, dict) else None
    if not isinstance(items, list):
        raise AnswerShapeError("unexpected answer to a targets request")
    out = Counted()
    for item in items:
        labels = labels_of(item.get("labels", {})) if isinstance(item, dict) else None
        interval = item.get("scrapeInterval", "") if isinstance(item, dict) else None
        if labels is None or not isinstance(interval, str):
            out.unreadable += 1
            continue
        out.rows.append({"labels": labels, "scrapeInterval": interval})
    return out
