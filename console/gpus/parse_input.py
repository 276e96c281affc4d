"""Saved nvidia-smi output as it arrives: any encoding, any size, in bounded memory.

PowerShell writes captures as UTF-16 with a BOM; a paste may come as
UTF-8 with a BOM. The text is decoded by what its first bytes say, read
block by block, and only a bounded part is kept: the first HEAD_LINES
lines (where headers and command lines are), the last TAIL_LINES (the
latest samples of a `-l` loop) and, of any line, its head and tail.
Bytes that are no text at all (NULs after decoding) are refused, not read.
"""
from __future__ import annotations

import codecs
from collections import deque
from typing import BinaryIO, Iterator

from console.servers.triage.carriers import capped_lines, sniff_encoding

BLOCK = 1 << 20
HEAD_LINES = 2000
TAIL_LINES = 50000


class BinaryInput(ValueError):
    """The input is binary data, not text."""


def _decoded(handle: BinaryIO, block: int) -> Iterator[str]:
    first = handle.read(block)
    if not first:
        return
    name = sniff_encoding(first)
    codec = "utf-16" if name.endswith("-bom") else name
    decoder = codecs.getincrementaldecoder(codec)(errors="replace")
    data = first
    while data:
        text = decoder.decode(data)
        if "\x00" in text:
            raise BinaryInput("binary data, not nvidia-smi output")
        yield text.replace("\r\n", "\n").replace("\r", "\n")
        data = handle.read(block)
    tail = decoder.decode(b"", final=True)
    if tail:
        yield tail


def read_saved_output(handle: BinaryIO, block: int = BLOCK) -> tuple[str, int]:
    """(text kept, number of lines left out in the middle); BinaryInput for binary data."""
    head: list[str] = []
    tail: deque[str] = deque(maxlen=TAIL_LINES)
    total = 0
    for line in capped_lines(_decoded(handle, block)):
        total += 1
        if len(head) < HEAD_LINES:
            head.append(line)
        else:
            tail.append(line)
    dropped = total - len(head) - len(tail)
    return "\n".join(head + list(tail)), dropped
