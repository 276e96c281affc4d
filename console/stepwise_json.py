"""JSON decoded one member at a time, so that other threads get the interpreter while a big answer is read.

`json.loads` is one C call, and a C call keeps the interpreter until it returns: at ten thousand
GPUs the fleet's Prometheus answer is about 16 MB and its decode keeps every other thread (the
UI's included) waiting for about 200 ms. Here the outer containers (the answer, its `data`, its
`result` list) are walked in Python and each of their members is decoded by the C scanner that
`json.loads` itself uses. Between two members the interpreter may switch threads, so the longest
wait is one member's decode.

It accepts and refuses exactly what `json.loads` does, with the same error class
(`json.JSONDecodeError`, a ValueError); tests/test_stepwise_json.py holds it to that.
"""
from __future__ import annotations

import json
import re
from json.decoder import JSONDecodeError, scanstring
from typing import Any, Callable

_SPACE = re.compile(r"[ \t\n\r]*")
_RUN_END = re.compile(r"\}[ \t\n\r]*,[ \t\n\r]*\{")
CHUNK = 64 * 1024   # characters decoded in one call: about a millisecond
Scan = Callable[[str, int], tuple[Any, int]]


def loads(body: bytes | bytearray | str, walked: int = 3, scanned: Callable[[int, int], None] | None = None) -> Any:
    """`json.loads(body)`, with the outer `walked` levels of containers walked member by member.

    `scanned(start, end)`, when given, is told each stretch of text the C scanner read in one call,
    a refused call as all it was handed (the tests bound both)."""
    if isinstance(body, str):
        if body.startswith("\ufeff"):
            raise JSONDecodeError("Unexpected UTF-8 BOM (decode using utf-8-sig)", body, 0)
        text = body
    else:
        text = body.decode(json.detect_encoding(body), "surrogatepass")
    scan = json.JSONDecoder().scan_once
    if scanned is not None:
        scan = _told(scan, scanned)
    value, end = _value(text, _skip(text, 0), walked, scan)
    end = _skip(text, end)
    if end != len(text):
        raise JSONDecodeError("Extra data", text, end)
    return value


def _told(scan: Scan, scanned: Callable[[int, int], None]) -> Scan:
    def counted(text: str, idx: int) -> tuple[Any, int]:
        end = len(text)         # a refused call is counted as reading all it was handed
        try:
            value, end = scan(text, idx)
        finally:
            scanned(idx, end)
        return value, end
    return counted


def _skip(text: str, idx: int) -> int:
    return _SPACE.match(text, idx).end()


def _value(text: str, idx: int, walked: int, scan: Scan) -> tuple[Any, int]:
    if walked > 0:
        first = text[idx:idx + 1]
        if first == "{":
            return _object(text, idx + 1, walked - 1, scan)
        if first == "[":
            return _array(text, idx + 1, walked - 1, scan)
    try:
        return scan(text, idx)
    except StopIteration as err:
        raise JSONDecodeError("Expecting value", text, err.value) from None


def _array(text: str, idx: int, walked: int, scan: Scan) -> tuple[list, int]:
    out: list = []
    idx = _skip(text, idx)
    if text[idx:idx + 1] == "]":
        return out, idx + 1
    append = out.append
    runs_from = idx             # members are decoded in runs from here on (see _runs)
    while True:
        if walked == 0 and idx >= runs_from:
            idx, runs_from = _runs(text, idx, scan, out)
        value, idx = _value(text, idx, walked, scan)
        append(value)
        mark = text[idx:idx + 1]
        if mark not in (",", "]"):          # whitespace after a member: rare in an answer, so looked for second
            idx = _skip(text, idx)
            mark = text[idx:idx + 1]
        if mark == "]":
            return out, idx + 1
        if mark != ",":
            raise JSONDecodeError("Expecting ',' delimiter", text, idx)
        idx += 1
        if text[idx:idx + 1] in (" ", "\n", "\t", "\r"):
            idx = _skip(text, idx)


def _runs(text: str, idx: int, scan: Scan, out: list) -> tuple[int, int]:
    """Members of a list decoded a run at a time from `idx` (a member's start); the next member's
    start, and where runs may be tried again.

    A run is cut at the first `},{` past CHUNK characters and decoded as a list of its own. Where
    that decode takes in the whole run, the cut is between two members of this list: the scanner
    reads the run exactly as it reads the same characters in place, so it ended at the cut in the
    state "after a member", and a cut inside a string or a deeper container would have left the run
    unfinished. Otherwise (a `},{` inside a label, say) the caller goes on one member at a time
    past that cut, so no character is tried in more than one refused run."""
    while True:
        cut = _RUN_END.search(text, idx + CHUNK)
        if cut is None:
            return idx, len(text) + 1
        try:
            run, end = scan("[" + text[idx:cut.start() + 1] + "]", 0)
        except (StopIteration, ValueError, RecursionError):
            return idx, cut.end()
        if end != cut.start() + 3 - idx:
            return idx, cut.end()
        out.extend(run)
        idx = cut.end() - 1        # the next member's `{`


def _object(text: str, idx: int, walked: int, scan: Scan) -> tuple[dict, int]:
    out: dict = {}
    idx = _skip(text, idx)
    if text[idx:idx + 1] == "}":
        return out, idx + 1
    while True:
        if text[idx:idx + 1] != '"':
            raise JSONDecodeError("Expecting property name enclosed in double quotes", text, idx)
        key, idx = scanstring(text, idx + 1, True)
        idx = _skip(text, idx)
        if text[idx:idx + 1] != ":":
            raise JSONDecodeError("Expecting ':' delimiter", text, idx)
        value, idx = _value(text, _skip(text, idx + 1), walked, scan)
        out[key] = value
        idx = _skip(text, idx)
        mark = text[idx:idx + 1]
        if mark == "}":
            return out, idx + 1
        if mark != ",":
            raise JSONDecodeError("Expecting ',' delimiter", text, idx)
        idx = _skip(text, idx + 1)
