"""A JSON list read one element at a time, so a dataset file never sits in memory whole.

`json.loads` of a 1 GB ShareGPT file held the text, then every object of it
(3 GB of RSS), when the bench keeps only each conversation's first two turns.
`iter_json_list` decodes one element at a time from a growing window of the
file; the caller keeps what it needs and the rest is freed as it goes. An
element larger than `max_item_chars` is refused (a file that is one giant
element would otherwise be re-read over and over).
"""
from __future__ import annotations

import json
from typing import Any, Iterator, TextIO

CHUNK_CHARS = 1 << 20
_SPACE = " \t\r\n"


class _Window:
    """The unread part of the file, refilled on demand."""

    def __init__(self, fh: TextIO):
        self.fh = fh
        self.buf = ""
        self.pos = 0
        self.eof = False
        self.more()

    def more(self) -> None:
        """Read on: at least a chunk, and as much as is pending (so a large element takes log(n) reads)."""
        chunk = self.fh.read(max(CHUNK_CHARS, len(self.buf) - self.pos))
        if not chunk:
            self.eof = True
        self.buf = self.buf[self.pos:] + chunk
        self.pos = 0

    def next_char(self) -> str:
        """The next character that is not white space ("" at the end of the file)."""
        while True:
            while self.pos < len(self.buf) and self.buf[self.pos] in _SPACE:
                self.pos += 1
            if self.pos < len(self.buf) or self.eof:
                return self.buf[self.pos] if self.pos < len(self.buf) else ""
            self.more()


def iter_json_list(fh: TextIO, max_item_chars: int) -> Iterator[Any]:
    """The elements of the JSON list in `fh`, in order; ValueError (one line) when it is not one."""
    decoder = json.JSONDecoder()
    win = _Window(fh)
    if win.next_char() != "[":
        raise ValueError("not a JSON list")
    win.pos += 1
    first = True
    while True:
        char = win.next_char()
        if char == "]":
            win.pos += 1
            if win.next_char():   # the file is one list: anything after it is not that
                raise ValueError("not JSON: text after the list's closing ]")
            return
        if not char:
            raise ValueError("not JSON: the list ends before its closing ]")
        if not first:
            if char != ",":
                raise ValueError(f"not JSON: expected ',' or ']' at {char!r}")
            win.pos += 1
            win.next_char()
        first = False
        while True:
            try:
                item, end = decoder.raw_decode(win.buf, win.pos)
            except json.JSONDecodeError as exc:
                if win.eof:
                    raise ValueError(f"not JSON ({exc.msg})") from None
                end = None
            except RecursionError:
                raise ValueError("not JSON: nested too deeply") from None
            if end is not None and (end < len(win.buf) or win.eof):   # a number may go on in the next chunk
                break
            if len(win.buf) - win.pos > max_item_chars:
                raise ValueError(f"an entry is larger than {max_item_chars:,} characters")
            win.more()
        win.pos = end
        yield item
