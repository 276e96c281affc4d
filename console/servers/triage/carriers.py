"""What carried a log to us, taken off again: encodings, line prefixes, colour codes.

A log reaches triage through docker, journald, Kubernetes, Ray, a markdown
paste in an issue or a PowerShell capture (UTF-16 with a BOM). Rules are
written against the server's own text, so every carrier is removed here,
and only here. Reading is streamed with a bound on the length of a kept
line, so that no input (a 2 GB file without a newline) can grow memory.
"""
from __future__ import annotations

import codecs
import re
from typing import BinaryIO, Iterator

# Longest line kept whole; a longer one keeps its head and tail around a marker.
MAX_LINE = 16384
_KEEP = MAX_LINE // 2
CUT_MARK = " … "

# Colour codes as they arrive: real ESC, caret-escaped (^[[0m), syslog's
# octal escape (#033[0m) and the Windows console's rendering (←[0m).
_ESCAPES = re.compile(r"(?:\x1b|\^\[|#033|\u2190)\[[0-9;?]*[A-Za-z]|\r")

# Line prefixes added by whatever carried the log, removed (repeatedly) so
# that anchored rules and excerpts see the server's own text.
_PREFIXES = re.compile(
    r"(?:"
    r">[ \t]?(?:-[ \t])?(?:[ \t]*\|[ \t]?)?"  # markdown quote (also "> - "), Buildkite's "  | " gutter
    r"|\u2502[ \t]?"  # a box-drawing border (k9s, kubectl plugins)
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]+(?:(?:stdout|stderr)[ \t]+[FP][ \t]+)?"  # docker / CRI
    r"|\[\d{4}-\d\d-\d\dT[\d:.]+Z?\][ \t]+"  # CI timestamps
    r"|[A-Z][a-z]{2}[ \t]+\d{1,2}[ \t]\d\d:\d\d:\d\d[ \t]\S+[ \t][\w.\-/@]+(?:\[\d+\])?:[ \t]"  # journald / syslog
    r"|\([\w.\-:]+(?:[ \t]+pid=\d+)?(?:,[ \t]*ip=[\d.]+)?\)[ \t]?"  # Ray / vLLM process tags
    r"|\([\w.\-]+[ \t]+rank=\d+[ \t]+pid=\d+\)[ \t]?"  # vLLM worker tags "(VllmWorker rank=2 pid=5521)"
    r"|\[[\w.\-]+\]:[ \t]?"  # "[vllm]:", "[server]:" wrapper prefixes
    r"|[\w.\-]+-\d+[ \t]+\|[ \t]"  # docker compose
    r"|[\w.\-]+[ \t]+\|[ \t](?=\S)"  # docker compose without a replica number
    r")"
)


# Which process printed a line, as a carrier prefix names it: vLLM's "(EngineCore pid=104)",
# "(VllmWorker rank=1 pid=12231)", "(APIServer pid=1)", Ray's "(RayWorkerWrapper pid=5, ip=10.0.0.2)",
# torch.distributed's "[rank3]:". Read while the prefixes are taken off, so that a verdict can
# still say which process its line came from.
_PROCESS_TAG = re.compile(r"\(([A-Za-z_][\w.\-]*(?:[ \t]+rank=\d+)?[ \t]+pid=\d+)(?:,[ \t]*ip=[\d.]+)?\)|\[(rank\d+)\]:")


def process_of(line: str) -> str | None:
    """The process a raw log line names in its carrier prefixes ("EngineCore pid=104", "rank3"), or None."""
    text = _ESCAPES.sub("", line[:400])
    for _ in range(4):
        match = _PREFIXES.match(text)
        if not match or match.end() == 0:
            return None
        tag = _PROCESS_TAG.fullmatch(match.group(0).strip())
        if tag is not None:
            return tag.group(1) or tag.group(2)
        text = text[match.end():]
    return None


def _has_escape(line: str) -> bool:
    """Could the line hold a colour code or a carriage return? (Most lines cannot: a few substring
    tests cost less than running the expression over every line.)"""
    return "[" in line and ("\x1b" in line or "^[" in line or "#033" in line or "\u2190" in line) or "\r" in line


def clean_line(line: str) -> str:
    """The server's own text: colour codes and carrier prefixes removed."""
    text = _ESCAPES.sub("", line).rstrip("\n") if _has_escape(line) else line.rstrip("\n")
    for _ in range(4):
        match = _PREFIXES.match(text)
        if not match or match.end() == 0:
            break
        text = text[match.end():]
    return text.rstrip()


def cap_line(line: str) -> str:
    """A line no longer than MAX_LINE (plus the marker): head and tail kept."""
    if len(line) <= MAX_LINE:
        return line
    return line[:_KEEP] + CUT_MARK + line[-_KEEP:]


def sniff_encoding(head: bytes) -> str:
    """The encoding of a log from its first bytes: a BOM, or the NUL pattern
    of UTF-16 text without one; UTF-8 otherwise."""
    if head.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    if head.startswith(codecs.BOM_UTF16_LE):
        return "utf-16-le-bom"
    if head.startswith(codecs.BOM_UTF16_BE):
        return "utf-16-be-bom"
    sample = head[:4096]
    if len(sample) >= 8:
        even_nul = sample[0::2].count(0)
        odd_nul = sample[1::2].count(0)
        half = len(sample) // 2
        if odd_nul > 0.4 * half and even_nul < 0.05 * half:
            return "utf-16-le"
        if even_nul > 0.4 * half and odd_nul < 0.05 * half:
            return "utf-16-be"
    return "utf-8"


def _decoder(name: str) -> tuple[codecs.IncrementalDecoder, int]:
    if name == "utf-16-le-bom":
        return codecs.getincrementaldecoder("utf-16")(errors="replace"), 0
    if name == "utf-16-be-bom":
        return codecs.getincrementaldecoder("utf-16")(errors="replace"), 0
    return codecs.getincrementaldecoder(name)(errors="replace"), 0


def read_chunks(handle: BinaryIO, block: int = 1 << 22) -> Iterator[str]:
    """Decoded text of a binary stream, block by block, with "\\r\\n" folded to "\\n".

    Memory is bounded by the block size: nothing is kept between blocks but
    the decoder's few pending bytes and a possible trailing "\\r"."""
    first = handle.read(block)
    if not first:
        return
    decoder, _ = _decoder(sniff_encoding(first))
    carry = ""
    data = first
    while data:
        text = carry + decoder.decode(data)
        carry = ""
        if text.endswith("\r"):
            text, carry = text[:-1], "\r"
        if "\x00" in text:
            text = text.replace("\x00", "")
        yield text.replace("\r\n", "\n")
        data = handle.read(block)
    tail = carry + decoder.decode(b"", final=True)
    if tail:
        yield tail.replace("\r\n", "\n")


def capped_lines(chunks: Iterator[str]) -> Iterator[str]:
    """Whole lines (without newline) from text chunks, each at most MAX_LINE
    long plus the cut marker; a partial line longer than that is cut as it
    grows, so memory stays bounded whatever the input."""
    head: str | None = None  # the first _KEEP characters of an over-long line
    partial = ""
    for chunk in chunks:
        start = 0
        while True:
            end = chunk.find("\n", start)
            if end < 0:
                partial += chunk[start:]
                if len(partial) > MAX_LINE:
                    if head is None:
                        head = partial[:_KEEP]
                    partial = partial[-_KEEP:]
                break
            piece = partial + chunk[start:end]
            partial = ""
            if head is not None:
                yield head + CUT_MARK + piece[-_KEEP:]
                head = None
            else:
                yield cap_line(piece)
            start = end + 1
    if partial or head is not None:
        yield (head + CUT_MARK + partial[-_KEEP:]) if head is not None else cap_line(partial)
