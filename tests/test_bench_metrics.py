"""Metric definitions on hand-built timelines, and the byte-level SSE and HTTP parsing."""
from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

import pytest

from console.bench.client import _COMPACT, _SPACED, _SSE, Live, count_content, decode_tail
from console.bench.http1 import ResponseError, StreamingResponse
from console.bench.metrics import (RequestRecord, distribution, meets_slo, parse_slo, percentile,
                                   summarize)
from console.bench.prom import parse_metrics, server_view

FIXTURES = Path(__file__).parent / "fixtures" / "bench"


def record(index, times, tokens=None, ok=True, input_tokens=10, source="usage"):
    return RequestRecord(index=index, ok=ok, chunk_times=list(times),
                         output_tokens=len(times) if tokens is None else tokens,
                         output_tokens_from=source, input_tokens=input_tokens)


def test_single_request_definitions():
    # sent at 0; content chunks at 0.5, 0.6, 0.8, 1.1 s; the server counted 4 tokens
    r = record(0, [0.5, 0.6, 0.8, 1.1])
    assert r.ttft == 0.5
    assert r.e2el == 1.1
    assert r.itls == pytest.approx([0.1, 0.2, 0.3])
    assert r.tpot == pytest.approx((1.1 - 0.5) / 3)


def test_tpot_uses_token_count_not_chunk_count():
    # two chunks carrying 6 tokens (multi-token chunks): TPOT divides by tokens - 1
    r = record(0, [0.2, 1.2], tokens=6)
    assert r.tpot == pytest.approx(1.0 / 5)


def test_tpot_undefined_for_one_token():
    assert record(0, [0.3], tokens=1).tpot is None


def test_percentile_interpolates_like_numpy():
    data = [1.0, 2.0, 3.0, 4.0]
    assert percentile(data, 50) == 2.5
    assert percentile(data, 90) == pytest.approx(3.7)
    assert percentile(data, 99) == pytest.approx(3.97)
    assert percentile([7.0], 99) == 7.0


def test_distribution_in_ms_with_population_std():
    d = distribution([0.1, 0.2, 0.3, 0.4])
    assert d["mean"] == pytest.approx(250.0)
    assert d["median"] == pytest.approx(250.0)
    assert d["std"] == pytest.approx(math.sqrt(((150**2) * 2 + (50**2) * 2) / 4))


def test_no_values_are_null_not_zero():
    assert distribution([]) == {"mean": None, "median": None, "p90": None, "p99": None, "std": None}


def test_level_summary_counts_only_successes():
    good_a = record(0, [0.5, 0.6, 0.7], input_tokens=100)
    good_b = record(1, [1.0, 1.5, 2.0], input_tokens=100)
    failed = RequestRecord(index=2, ok=False, error="connection refused", chunk_times=[9.0, 9.5],
                           output_tokens=2, input_tokens=100)
    s = summarize([good_a, good_b, failed], duration_s=4.0)
    assert s["input_tokens"] == 200
    assert s["output_tokens"] == 6
    assert s["request_throughput"] == pytest.approx(0.5)
    assert s["output_throughput"] == pytest.approx(1.5)
    assert s["total_token_throughput"] == pytest.approx(206 / 4)
    assert s["ttft_ms"]["mean"] == pytest.approx(750.0)
    # ITLs pooled across requests: 100, 100, 500, 500 ms
    assert s["itl_ms"]["median"] == pytest.approx(300.0)
    assert s["tpot_ms"]["mean"] == pytest.approx((100 + 500) / 2)
    assert s["e2el_ms"]["p99"] == pytest.approx(700 + (2000 - 700) * 0.99)
    assert s["output_tokens_counted"] == "usage"


def test_chunk_counted_outputs_are_flagged():
    s = summarize([record(0, [0.1, 0.2], source="chunks")], duration_s=1.0)
    assert s["output_tokens_counted"] == "chunks"


def test_goodput_against_slo():
    fast = record(0, [0.1, 0.15, 0.2])       # ttft 100 ms, tpot 50 ms
    slow_start = record(1, [0.9, 0.95, 1.0])  # ttft 900 ms
    slow_tokens = record(2, [0.1, 0.5, 0.9])  # tpot 400 ms
    slo = parse_slo("ttft=500,tpot=100")
    assert slo == {"ttft": 500.0, "tpot": 100.0}
    assert meets_slo(fast, slo) and not meets_slo(slow_start, slo) and not meets_slo(slow_tokens, slo)
    s = summarize([fast, slow_start, slow_tokens], duration_s=2.0, slo=slo)
    assert s["good_requests"] == 1
    assert s["goodput"] == pytest.approx(0.5)


@pytest.mark.parametrize("text", ["ttft", "foo=3", "ttft=abc", "tpot=-1"])
def test_bad_slo(text):
    with pytest.raises(ValueError):
        parse_slo(text)


# ------------------------------------------------------------ SSE bytes


def sse(doc) -> bytes:
    return b"data: " + json.dumps(doc, separators=(",", ":")).encode() + b"\n\n"


def test_content_chunks_found_without_decoding():
    block = (sse({"choices": [{"text": "Hello"}]}) + sse({"choices": [{"text": ""}]})
             + sse({"choices": [{"text": "\"quoted\" \"text\":\"x\""}]}))
    assert count_content(block, _COMPACT) == 2


def test_chat_role_chunk_and_null_content_are_not_tokens():
    block = (sse({"choices": [{"delta": {"role": "assistant", "content": None}}]})
             + sse({"choices": [{"delta": {"role": "assistant", "content": ""}}]})
             + sse({"choices": [{"delta": {"content": "Hi"}}]})
             + sse({"choices": [{"delta": {"reasoning_content": "hmm"}}]})
             + sse({"choices": [{"delta": {}, "finish_reason": "length"}]}))
    assert count_content(block, _COMPACT) == 2


def test_spaced_json_is_recognised():
    block = b'data: {"choices": [{"delta": {"content": "Hi"}}]}\n\n'
    assert count_content(block, _SPACED) == 1


def test_usage_line_is_decoded_and_chunks_split_across_reads():
    live = Live()
    times: list[float] = []
    state = _SSE(times, live, start=10.0)
    first = sse({"choices": [{"text": "a"}]})
    stream = (first + sse({"choices": [{"text": "b"}]})
              + sse({"choices": [{"text": ""}], "usage": {"completion_tokens": 2, "prompt_tokens": 5},
                     "timings": {"predicted_per_token_ms": 9.5}}) + b"data: [DONE]\n\n")
    # cut in awkward places: inside the first marker, inside the usage object;
    # a chunk is stamped when its line is complete
    cuts = [13, len(first) + 3, len(stream) - 40, len(stream)]
    prev = 0
    for i, cut in enumerate(cuts):
        state.feed(stream[prev:cut], 10.0 + i)
        prev = cut
    assert live.tokens == 2
    assert times == [1.0, 2.0]
    assert state.tail[0]["usage"]["completion_tokens"] == 2
    assert decode_tail(b'data: {"error":{"message":"boom"}}\n') == [{"error": {"message": "boom"}}]


# ------------------------------------------------------------ HTTP framing


async def _feed(pieces: list[bytes]):
    got: list[bytes] = []
    done = asyncio.get_running_loop().create_future()
    proto = StreamingResponse(b"", lambda data, now: got.append(data), done)
    for piece in pieces:
        proto.data_received(piece)
        if done.done():
            break
    else:
        proto.eof_received()
    return done, b"".join(got)


async def test_chunked_body_reassembled_from_any_split():
    body = b"data: one\n\ndata: two\n\n"
    wire = (b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
            + b"b\r\n" + body[:11] + b"\r\n" + b"B;ext=1\r\n" + body[11:] + b"\r\n0\r\n\r\n")
    for step in (1, 3, 7, len(wire)):
        done, got = await _feed([wire[i:i + step] for i in range(0, len(wire), step)])
        assert done.result() == 200
        assert got == body


async def test_stream_cut_off_is_named():
    wire = b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n"
    done, _ = await _feed([wire])
    with pytest.raises(ResponseError, match="stream cut off mid-response"):
        done.result()


async def test_error_status_keeps_body():
    wire = b"HTTP/1.1 400 Bad Request\r\nContent-Length: 11\r\n\r\nbad request"
    got = []
    done = asyncio.get_running_loop().create_future()
    proto = StreamingResponse(b"", lambda d, n: got.append(d), done)
    proto.data_received(wire)
    assert done.result() == 400 and proto.error_body == b"bad request" and got == []


# ------------------------------------------------------------ Prometheus


def test_llamacpp_metrics_from_a_real_server():
    sample = parse_metrics((FIXTURES / "llamacpp_metrics.txt").read_text())
    assert sample.gen_tokens_total is not None and sample.gen_tokens_total > 0
    assert sample.running == 0 and sample.queued == 0
    assert sample.kv_cache is None  # this llama.cpp build does not export it: unknown, not 0


def test_vllm_metrics_sum_engines_and_rate_from_counter():
    text = (FIXTURES / "vllm_metrics.txt").read_text()
    first = parse_metrics(text, at=100.0)
    assert first.running == 64 and first.queued == 3 and first.kv_cache == pytest.approx(0.42)
    assert first.gen_tokens_total == 125000
    second = parse_metrics(text.replace("120000.0", "121500.0"), at=102.0)
    view = server_view(first, second)
    assert view["gen_tps"] == pytest.approx(750.0)
    assert view["running"] == 64


def test_sglang_gauges():
    view = server_view(None, parse_metrics((FIXTURES / "sglang_metrics.txt").read_text()))
    assert view == {"gen_tps": pytest.approx(612.4), "running": 256, "queued": 12,
                    "kv_cache": pytest.approx(0.81)}


def test_sharding_plan():
    from console.bench.shard import plan_workers

    assert plan_workers(512, None, None) == 1          # no evidence the client lags
    assert plan_workers(512, None, 5.0) == 1
    assert plan_workers(64, None, 500.0) == 1          # below 256 streams one process is plenty
    assert plan_workers(512, None, 80.0) >= 2
    assert plan_workers(4, 2, None) == 2               # the operator's number wins
