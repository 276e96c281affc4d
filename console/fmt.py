"""The one place for how values read: the unknown marker, numbers, durations, clock times.

Shared by the CLI, the report and the screens, so an unknown value reads
`N/A` everywhere (never 0, never a dash) and every clock time looks the same.
"""
from __future__ import annotations

import math
import time

UNKNOWN = "N/A"


def number(value: float | None, digits: int = 1, suffix: str = "") -> str:
    """`1,234.5` with a suffix, or N/A when unknown (NaN and infinities are no number either)."""
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return UNKNOWN
    return f"{value:,.{digits}f}{suffix}"


def clock(epoch: float | None) -> str:
    """Local wall-clock time of an instant, `14:02:11`, or N/A."""
    return UNKNOWN if epoch is None else time.strftime("%H:%M:%S", time.localtime(epoch))


def stamp(epoch: float | None = None) -> str:
    """Local date and time for a person to read, `2026-12-01 14:02:11`; now when no instant is given."""
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(epoch))


def iso(epoch: float | None = None) -> str:
    """Local date and time with its UTC offset, for records: `2026-12-01T14:02:11+0000`; now by default."""
    return time.strftime("%Y-%m-%dT%H:%M:%S%z", time.localtime(epoch))


def duration(seconds: float | None, tenths: bool = False) -> str:
    """How long something has run: '45s', '12m05s', '2h13m'; 'N/A' when unknown.

    With `tenths`, under ten seconds reads '0.4s' (the age of a sample taken a moment ago).
    """
    if seconds is None:
        return UNKNOWN
    if tenths and 0 <= seconds < 9.95:
        return f"{seconds:.1f}s"
    seconds = int(max(0, seconds))  # clock skew never shows a negative age
    if seconds < 60:
        return f"{seconds}s"
    if seconds < 3600:
        return f"{seconds // 60}m{seconds % 60:02d}s"
    return f"{seconds // 3600}h{seconds % 3600 // 60:02d}m"


def middle_cut(text: str, width: int) -> str:
    """`text` in at most `width` characters, cut in the middle (`run_tp8_cd…max-bs=32`): names made
    of a base and a variant (a campaign's grid configs) differ at their end, and a cut end made two
    of them read alike."""
    if width <= 0 or len(text) <= width:
        return text if width > 0 else ""
    if width == 1:
        return "…"
    tail = (width - 1) // 2
    return f"{text[:width - 1 - tail]}…{text[len(text) - tail:]}" if tail else f"{text[:width - 1]}…"
