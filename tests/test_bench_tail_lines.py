"""The lines a streamed block is decoded from are found by byte search, not by splitting the block:
the same documents, in the same order, as reading the block line by line, and the same end."""
from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from console.bench.client import _FULL_DECODE, _done_line, decode_tail


def _line_by_line(block: bytes) -> list[dict]:
    """What reading every line of the block gives: each `data:` line holding a key, decoded."""
    docs = []
    for line in block.split(b"\n"):
        line = line.strip()
        if line.startswith(b"data:") and any(key in line for key in _FULL_DECODE):
            try:
                doc = json.loads(line[5:])
            except ValueError:
                continue
            if isinstance(doc, dict):
                docs.append(doc)
    return docs


_TOKEN = b'data: {"choices":[{"text":" tok","finish_reason":null}]}'
_USAGE = b'data: {"choices":[],"usage":{"prompt_tokens":3,"completion_tokens":64}}'
_SPACED_USAGE = b'data: {"choices": [], "usage": {"completion_tokens": 2}}'
_TIMINGS = b'data: {"choices":[],"timings":{"predicted_per_token_ms":4.5}}'
_ERROR = b'data: {"error":{"message":"boom"}}'
_ABORT = b'data: {"choices":[{"text":"","finish_reason":"abort"}]}'
_BROKEN = b'data: {"usage":{'                       # a key, and no JSON document
_NOT_DATA = b': {"usage":{"completion_tokens":1}}'     # an SSE comment holding a key
_TEXT_WITH_KEY = b'data: {"choices":[{"text":"the \\"usage\\":{ word"}]}'
_DONE, _DONE_TIGHT = b"data: [DONE]", b"data:[DONE]"
_TEXT_DONE = b'data: {"choices":[{"text":"[DONE]"}]}'   # [DONE] inside a line: not the end
PIECES = [_TOKEN, _USAGE, _SPACED_USAGE, _TIMINGS, _ERROR, _ABORT, _BROKEN, _NOT_DATA, _TEXT_WITH_KEY,
          _DONE, _DONE_TIGHT, _TEXT_DONE, b"", b"  ", b"\r"]


def _ends_line_by_line(block: bytes) -> bool:
    return any(line.strip() in (b"data: [DONE]", b"data:[DONE]") for line in block.split(b"\n"))


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from([b"\n", b"\r\n", b"\n\n"]),
       st.booleans())
def test_tail_and_end_read_as_line_by_line(pieces, sep, trailing):
    block = sep.join(pieces) + (sep if trailing else b"")
    assert decode_tail(block) == _line_by_line(block)
    assert _done_line(block) == _ends_line_by_line(block)


def test_a_whole_response_gives_its_usage_once_and_ends():
    block = b"\n\n".join([_TOKEN] * 64 + [_USAGE, _DONE]) + b"\n\n"
    assert decode_tail(block) == [{"choices": [], "usage": {"prompt_tokens": 3, "completion_tokens": 64}}]
    assert _done_line(block)
    assert not _done_line(b"\n\n".join([_TOKEN, _TEXT_DONE]) + b"\n\n")
