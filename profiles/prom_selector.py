"""The label selector a Prometheus profile narrows its fleet with: '{cluster="a"}'."""
from __future__ import annotations

import re

_MATCHER = r'\s*[A-Za-z_][A-Za-z0-9_]*\s*(?:=|!=|=~|!~)\s*"(?:[^"\\\n]|\\.)*"\s*'
_MATCHERS = re.compile(rf"{_MATCHER}(?:,{_MATCHER})*,?\s*")


def selector_matchers(selector: str | None) -> str:
    """'{cluster="a"}' -> 'cluster="a"' (braces optional); ValueError for anything else."""
    text = (selector or "").strip()
    if text.startswith("{") and text.endswith("}"):
        text = text[1:-1].strip()
    if not text:
        return ""
    if not _MATCHERS.fullmatch(text):
        raise ValueError(f"not a label selector: {selector!r} (expected e.g. '{{cluster=\"a\"}}')")
    return text.rstrip(", ")


def check_selector(selector: str | None) -> str | None:
    """None when the selector is usable, else why not."""
    try:
        selector_matchers(selector)
    except ValueError as exc:
        return str(exc)
    return None
