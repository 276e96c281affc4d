"""The bench client's in-place read path and its event loop.

Reads are fed the way asyncio feeds a BufferedProtocol: bytes written into
the buffer `get_buffer` returned, then `buffer_updated(n)`.
"""
from __future__ import annotations

import asyncio
import json

import pytest
from hypothesis import given, settings, strategies as st

from console.bench import loop as bench_loop
from console.bench.client import _SSE, Live
from console.bench.http1 import ResponseError, StreamingResponse

HEAD = b"HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nTransfer-Encoding: chunked\r\n\r\n"


def chunk(payload: bytes) -> bytes:
    return f"{len(payload):x}\r\n".encode() + payload + b"\r\n"


def event(text: str, **extra) -> bytes:
    doc = {"choices": [{"index": 0, "text": text}], **extra}
    return b"data: " + json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode() + b"\n\n"


def read(proto: StreamingResponse, data: bytes) -> None:
    """One read as asyncio does it, split where the buffer is smaller than the data."""
    while data:
        buf = proto.get_buffer(-1)
        n = min(len(buf), len(data))
        buf[:n] = data[:n]
        proto.buffer_updated(n)
        data = data[n:]


class Sink:
    def __init__(self):
        self.calls: list[bytes] = []

    def __call__(self, data: bytes, now: float) -> None:
        self.calls.append(data)

    @property
    def body(self) -> bytes:
        return b"".join(self.calls)


async def _proto(sink) -> tuple[StreamingResponse, asyncio.Future]:
    done = asyncio.get_running_loop().create_future()
    return StreamingResponse(b"", sink, done), done


class _NoGeneralPath(StreamingResponse):
    """Fails the test when a read after the head goes through the general de-chunker."""

    armed = False

    def data_received(self, data: bytes) -> None:
        assert not self.armed, "a whole chunk went through data_received"
        super().data_received(data)

    def _dechunk(self, data: bytes, now: float) -> None:
        assert not self.armed, "a whole chunk went through the general de-chunker"
        super()._dechunk(data, now)


async def test_whole_chunk_per_read_is_parsed_in_place():
    sink = Sink()
    done = asyncio.get_running_loop().create_future()
    proto = _NoGeneralPath(b"", sink, done)
    read(proto, HEAD)
    proto.armed = True
    events = [event(" tok") for _ in range(3)]
    for e in events:
        read(proto, chunk(e))
    assert sink.calls == events     # one sink call per read, the payload alone
    assert not done.done()


async def test_several_chunks_in_one_read_make_one_sink_call():
    sink = Sink()
    proto, done = await _proto(sink)
    read(proto, HEAD)
    events = [event(f"t{i}") for i in range(5)]
    read(proto, b"".join(chunk(e) for e in events))
    assert sink.calls == [b"".join(events)]
    read(proto, chunk(event("", usage={"completion_tokens": 6})) + b"0\r\n\r\n")
    assert done.result() == 200
    assert sink.body == b"".join(events) + event("", usage={"completion_tokens": 6})


async def test_chunk_split_across_reads_and_whole_chunks_before_it():
    sink = Sink()
    proto, done = await _proto(sink)
    read(proto, HEAD)
    a, b, c = event("a"), event("b"), event("c")
    wire = chunk(a) + chunk(b) + chunk(c) + b"0\r\n\r\n"
    cut = len(chunk(a)) + 7             # inside the second chunk's payload
    read(proto, wire[:cut])
    read(proto, wire[cut:cut + 3])
    read(proto, wire[cut + 3:])
    assert done.result() == 200
    assert sink.body == a + b + c


async def test_utf8_character_split_by_chunk_and_read_boundaries():
    """A chunk boundary inside a character: bytes pass whole, each event counted once."""
    live, times = Live(), []
    sse = _SSE(times, live, start=0.0)
    proto, done = await _proto(sse.feed)
    read(proto, HEAD)
    text = event("é€😀")
    split = text.index("€".encode()) + 1       # inside the three bytes of €
    read(proto, chunk(text[:split]))
    assert live.tokens == 0                    # the line is not complete yet
    read(proto, chunk(text[split:]) + chunk(event("ü")[:-1]))   # and a read ending mid-event
    read(proto, chunk(b"\n") + b"0\r\n\r\n")
    assert done.result() == 200
    assert live.tokens == 2 and len(times) == 2
    assert sse.pending == b""


@pytest.mark.parametrize("wire, message", [
    (b"zz\r\nhello\r\n", "bad chunked encoding"),
    (b"ffffffff\r\nhello", "stream cut off mid-response"),  # a size far past what came
    (b"\x00\xff\r\n\r\n", "bad chunked encoding"),
])
async def test_garbage_after_a_good_head_fails_the_request(wire, message):
    sink = Sink()
    proto, done = await _proto(sink)
    read(proto, HEAD)
    read(proto, wire)
    if not done.done():
        proto.eof_received()
    with pytest.raises(ResponseError, match=message):
        done.result()


async def test_garbage_instead_of_a_response_fails_the_request():
    sink = Sink()
    proto, done = await _proto(sink)
    read(proto, b"\x16\x03\x01 not http at all\r\n\r\n5\r\nhello\r\n")
    with pytest.raises(ResponseError, match="bad response line"):
        done.result()
    assert sink.calls == []


async def test_error_status_with_chunked_body_keeps_it_out_of_the_sink():
    sink = Sink()
    proto, done = await _proto(sink)
    read(proto, b"HTTP/1.1 500 Oops\r\nTransfer-Encoding: chunked\r\n\r\n")
    read(proto, chunk(b"server fell over") + b"0\r\n\r\n")
    assert done.result() == 500 and proto.error_body == b"server fell over" and sink.calls == []


def _outcome(done: asyncio.Future) -> str:
    if not done.done():
        return "open"
    exc = done.exception()
    return f"error {exc}" if exc else f"status {done.result()}"


_payload = st.binary(max_size=40) | st.sampled_from([event("é"), event(" tok"), b"\r\n", b"0\r\n\r\n"])
_piece = st.one_of(_payload.map(chunk), st.sampled_from([b"0\r\n\r\n", b"zz\r\n", b"\r\n", b"3;x=1\r\nabc\r\n"]),
                   st.binary(max_size=6))


@settings(max_examples=300, deadline=None)
@given(st.lists(_piece, max_size=8).map(b"".join), st.lists(st.integers(0, 400), max_size=6),
       st.sampled_from([HEAD, b"HTTP/1.1 404 No\r\nTransfer-Encoding: chunked\r\n\r\n"]))
def test_in_place_path_agrees_with_the_general_one(body, cuts, head):
    """Any bytes cut anywhere: the same outcome, body and error body as byte-by-byte parsing."""
    wire = head + body
    loop = asyncio.new_event_loop()
    try:
        results = []
        for feed in ("buffer", "general"):
            sink = Sink()
            done = loop.create_future()
            proto = StreamingResponse(b"", sink, done)
            pos = 0
            for cut in sorted(c % (len(wire) + 1) for c in cuts) + [len(wire)]:
                if done.done():
                    break
                piece = wire[pos:cut]
                pos = cut
                if not piece:
                    continue
                if feed == "buffer":
                    read(proto, piece)
                else:
                    for i in range(len(piece)):    # one byte a read: never the in-place path
                        proto.data_received(piece[i:i + 1])
                        if done.done():
                            break
            if not done.done():
                proto.eof_received()
            results.append((sink.body, proto.error_body, _outcome(done)))
            if done.done() and not done.cancelled():
                done.exception()
        (body_fast, error_fast, outcome_fast), (body_ref, error_ref, outcome_ref) = results
        assert outcome_fast == outcome_ref
        if outcome_ref.startswith("status"):
            assert (body_fast, error_fast) == (body_ref, error_ref)
        else:   # a failed request: what came before the garbage may or may not have been passed on
            assert body_ref.startswith(body_fast) and error_ref.startswith(error_fast)
    finally:
        loop.close()


# ------------------------------------------------------------ the loop


def test_without_uvloop_the_sweep_runs_on_asyncio_and_says_so(monkeypatch):
    monkeypatch.setattr(bench_loop, "_uvloop", lambda: None)

    async def info():
        return bench_loop.clock_info()

    got = bench_loop.run(info())
    assert got["loop"] == "asyncio" and got["clock"] == "perf_counter"
    assert 0 < got["resolution_ms"] < 1


def test_uvloop_is_used_when_installed(monkeypatch):
    made = []

    class FakeUvloop:
        @staticmethod
        def new_event_loop():
            loop = asyncio.new_event_loop()
            made.append(loop)
            return loop

    monkeypatch.setattr(bench_loop, "_uvloop", lambda: FakeUvloop)

    async def running():
        return asyncio.get_running_loop()

    assert bench_loop.run(running()) is made[0]
    assert bench_loop.run(running(), use_uvloop=False) is not made[0] and len(made) == 1
