"""Slurm host lists (`n[1-3,07]`, `a1,b[2-3]`) expanded to node names, bounded in size."""
from __future__ import annotations

import re

MAX_NODES = 4096

_BRACKET = re.compile(r"^([^\[\],]*)\[([0-9,\-]+)\]([^\[\],]*)$")


class HostlistError(ValueError):
    """A host list this reader does not understand (the message names it)."""


def _split_top(text: str) -> list[str]:
    parts, depth, start = [], 0, 0
    for i, ch in enumerate(text):
        if ch == "[":
            depth += 1
        elif ch == "]":
            depth -= 1
        elif ch == "," and depth == 0:
            parts.append(text[start:i])
            start = i + 1
    parts.append(text[start:])
    return [p for p in parts if p]


def expand(text: str) -> list[str]:
    """`n[1-2],gpu07` -> ['n1', 'n2', 'gpu07']; '' and '(null)' -> []."""
    text = (text or "").strip()
    if text in ("", "(null)", "None", "N/A"):
        return []
    out: list[str] = []
    for part in _split_top(text):
        m = _BRACKET.match(part)
        if not m:
            if "[" in part or "]" in part:
                raise HostlistError(f"unreadable host list {text[:80]!r}")
            out.append(part)
            continue
        prefix, ranges, suffix = m.groups()
        for item in ranges.split(","):
            lo, _, hi = item.partition("-")
            if not lo.isdigit() or (hi and not hi.isdigit()):
                raise HostlistError(f"unreadable host list {text[:80]!r}")
            width = len(lo)
            start, end = int(lo), int(hi or lo)
            if end < start or end - start + len(out) > MAX_NODES:
                raise HostlistError(f"host list too long or reversed: {text[:80]!r}")
            out.extend(f"{prefix}{n:0{width}d}{suffix}" for n in range(start, end + 1))
        if len(out) > MAX_NODES:
            raise HostlistError(f"host list too long: {text[:80]!r}")
    return out
