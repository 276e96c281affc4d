"""Where each rule key first occurs in a block of text: one pass, many literals.

The scanner needs, for every key still worth looking for, its first
position in a block; a `str.find` per key reads the block once per key
(hundreds of passes). Hyperscan finds all of them in one SIMD pass, each
literal reported once (SINGLEMATCH), so a million-line log is read about
once. Without the `hyperscan` module (a platform with no wheel) the
per-key `find` gives the same answer, slower.
"""
from __future__ import annotations

import importlib
import re
from types import ModuleType
from typing import Any, Iterable

_hs: ModuleType | None
try:  # optional accelerator: same results without it
    _hs = importlib.import_module("hyperscan")
except ImportError:  # pragma: no cover - exercised by forcing FORCE_FALLBACK in tests
    _hs = None

# Below this size a block is scanned with str.find: cheaper than a pass through the library.
SMALL_BLOCK = 1 << 16
FORCE_FALLBACK = False  # tests set this to check both paths give one answer


class FirstPositions:
    """Compiled once per set of keys (the set changes a few times per log)."""

    def __init__(self) -> None:
        self._cache: dict[frozenset[str], tuple[Any, list[str]]] = {}  # keys -> (database, keys in order)

    def first(self, text: str, keys: Iterable[str]) -> dict[str, int]:
        """key -> offset of its first occurrence in `text`, for the keys present."""
        keys = [key for key in keys if key]
        if _hs is None or FORCE_FALLBACK or len(text) < SMALL_BLOCK or not all(k.isascii() for k in keys):
            return _by_find(text, keys)
        database, ordered = self._database(_hs, frozenset(keys))
        # One code point -> one byte, so byte offsets are str offsets; rule keys
        # are ASCII, so replacing other characters by "?" hides no key.
        data = text.encode("ascii", "replace")
        found: dict[str, int] = {}

        def on_match(index: int, _start: int, end: int, _flags: int, _context: object) -> None:
            key = ordered[index]
            found[key] = end - len(key)

        database.scan(data, match_event_handler=on_match)
        return found

    def _database(self, hs: ModuleType, keys: frozenset[str]) -> tuple[Any, list[str]]:
        cached = self._cache.get(keys)
        if cached is None:
            ordered = sorted(keys)
            database = hs.Database(mode=hs.HS_MODE_BLOCK)
            database.compile(expressions=[re.escape(key).encode() for key in ordered],
                             ids=list(range(len(ordered))), elements=len(ordered),
                             flags=[hs.HS_FLAG_SINGLEMATCH] * len(ordered))
            if len(self._cache) > 32:
                self._cache.clear()
            cached = self._cache[keys] = (database, ordered)
        return cached


def _by_find(text: str, keys: Iterable[str]) -> dict[str, int]:
    found = {}
    for key in keys:
        position = text.find(key)
        if position >= 0:
            found[key] = position
    return found


def accelerated() -> bool:
    return _hs is not None and not FORCE_FALLBACK
