"""Turning nvidia-smi's cell texts into numbers, or NA.

nvidia-smi writes an unknown value in many ways: "[N/A]", "N/A",
"[Not Supported]", "[Unknown Error]", "[GPU requires reset]", "ERR!"...
All of them become NA. Units ("MiB", "%", "W", "MHz", "C") are dropped.
"""
from __future__ import annotations

import re
from typing import Any

from .model import NA

_NA_WORDS = {"n/a", "na", "not supported", "unknown error", "not available", "gpu requires reset",
             "insufficient permissions", "unknown", "err!", "gpu is lost", "", "-", "..."}
_NUMBER = re.compile(r"^([-+]?\d+(?:\.\d+)?)\s*(MiB|GiB|KiB|MB|GB|%|W|MHz|C|°C|B)?$", re.IGNORECASE)


def is_na(text: str) -> bool:
    return text.strip().strip("[]").strip().lower() in _NA_WORDS


def number(text: str) -> Any:
    """An int or float from "76.12 W", "0 %", "143771"; NA for anything else."""
    text = text.strip()
    if is_na(text):
        return NA
    m = _NUMBER.match(text)
    if not m:
        return NA
    raw, unit = m.group(1), (m.group(2) or "").lower()
    value: float = float(raw)
    if unit == "gib" or unit == "gb":
        value *= 1024
    elif unit == "kib":
        value /= 1024
    if value.is_integer() and "." not in raw:
        return int(value)
    return round(value, 2)


def integer(text: str) -> Any:
    value = number(text)
    return int(value) if value is not NA else NA


def word(text: str) -> Any:
    text = text.strip()
    return NA if is_na(text) else text


def hexmask(text: str) -> Any:
    """A bitmask written "0x0000000000000004" (or decimal); NA otherwise."""
    text = text.strip()
    if is_na(text):
        return NA
    try:
        return int(text, 16) if text.lower().startswith("0x") else int(text)
    except ValueError:
        return NA
