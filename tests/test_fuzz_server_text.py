"""Fuzzing what a running server writes: its `/metrics` page, its args line, its log's lines.

Hypothesis generates 200 inputs per kind (1,000 with GPUDECK_FUZZ=nightly) from
the real pages and logs in the fixtures, with values no server means (NaN,
±Inf, 1e308, thousands of digits, hostile text) put where numbers go:

- a `/metrics` page is read into a LiveMetrics or refused with one line, and
  every value it keeps is a finite number in its range, shown without `inf`
  or `nan` by the CLI's line and the Server tab's;
- an args line (vLLM's dict, sglang's dataclass repr or dict, llama.cpp's
  lines) gives flags that can be shown, compared and saved as JSON, and
  neither the args reader nor triage raises on it (the monitor feeds both
  every line);
- any byte stream read as lines (a short line limit, so long lines are
  common) hands on every line at most the limit long, counts every byte once,
  and says which lines were cut.
"""
from __future__ import annotations

import asyncio
import json
import math
from pathlib import Path

from hypothesis import given
from hypothesis import strategies as st

from tests.hostile_text import HOSTILE, unsafe_chars
from tests.fuzz_budget import fuzz_settings

FIXTURES = Path(__file__).resolve().parent / "fixtures"
FUZZ = fuzz_settings()

# Numbers as a page or a log may spell them, the ones no server means first.
ABSURD = ["NaN", "nan", "+Inf", "-Inf", "inf", "Infinity", "1e308", "-1e308", "1e999", "-1", "1e-320",
          "9" * 400, "9" * 5000, "-" + "9" * 5000, "0x10", "1_000", "", "ünï"]
NUMBERS = st.one_of(st.sampled_from(ABSURD), st.floats(allow_nan=True, allow_infinity=True).map(repr),
                    st.integers(-(10 ** 30), 10 ** 30).map(str))


def _lines(path: Path) -> list[str]:
    return path.read_text().splitlines()


# ---- /metrics pages -----------------------------------------------------------------------------

BENCH = FIXTURES / "bench"
PAGES = [_lines(BENCH / "vllm_cpu_0.32_metrics.txt"), _lines(BENCH / "vllm_metrics.txt"),
         _lines(BENCH / "llamacpp_metrics.txt")]
SERIES = ("vllm:num_requests_running", "vllm:num_requests_waiting", "vllm:kv_cache_usage_perc",
          "vllm:num_preemptions_total", "vllm:time_to_first_token_seconds_sum",
          "vllm:time_to_first_token_seconds_count", "vllm:inter_token_latency_seconds_sum",
          "vllm:inter_token_latency_seconds_count", "sglang:token_usage", "sglang:num_running_reqs",
          "llamacpp:tokens_predicted_seconds_total", "llamacpp:tokens_predicted_total",
          "llamacpp:kv_cache_usage_ratio", "llamacpp:requests_processing")


@st.composite
def metrics_pages(draw) -> str:
    """A real page with some of its values replaced and series of ours added, hostile labels among them."""
    lines = list(draw(st.sampled_from(PAGES)))
    for _ in range(draw(st.integers(0, 12))):
        at = draw(st.integers(0, max(0, len(lines) - 1)))
        line = lines[at] if lines else ""
        if line and not line.startswith("#") and " " in line:
            lines[at] = line.rsplit(" ", 1)[0] + " " + draw(NUMBERS)
    for _ in range(draw(st.integers(0, 8))):
        name = draw(st.sampled_from(SERIES))
        label = draw(st.one_of(st.just(""), st.sampled_from(HOSTILE).map(
            lambda t: '{model_name="' + t.replace("\\", "\\\\").replace('"', '\\"').replace("\n", "\\n") + '"}')))
        lines.insert(draw(st.integers(0, len(lines))), f"{name}{label} {draw(NUMBERS)}")
    if draw(st.booleans()):
        lines.insert(draw(st.integers(0, len(lines))), draw(st.text(max_size=200)))
    return "\n".join(lines) + "\n"


@FUZZ
@given(metrics_pages())
def test_a_metrics_page_is_read_into_finite_values_or_refused_in_one_line(page):
    from console.servers.live_metrics import LiveMetrics, read_metrics, summary_line
    from widgets.server_metrics import metrics_line
    from console.runtime import events as ev

    try:
        got = read_metrics(page)
    except ValueError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("/metrics"), str(exc)
        return
    assert isinstance(got, LiveMetrics)
    for name in ("running", "waiting", "kv_cache_usage", "preemptions", "ttft_mean_ms", "itl_mean_ms"):
        value = getattr(got, name)
        assert value is None or (math.isfinite(value) and value >= 0), (name, value)
    assert got.kv_cache_usage is None or got.kv_cache_usage <= 1
    shown = summary_line(got.to_json())
    event = ev.ServerMetricsSampled("p", "r", "c", got, taken_at=1.0, polled_at=1.0, stale=False, stale_after_s=3.0)
    tab = metrics_line(event, 1.0).plain
    for line in (shown, tab):
        assert "inf" not in line.lower() and "nan" not in line.lower(), line
        assert not unsafe_chars(line), line
    json.dumps(got.to_json(), allow_nan=False)   # what `server status --json` prints


# ---- args lines ---------------------------------------------------------------------------------

VLLM_NAMES = ("model", "tensor_parallel_size", "data_parallel_size", "pipeline_parallel_size",
              "gpu_memory_utilization", "max_num_seqs", "max_model_len", "quantization", "kv_cache_dtype",
              "port", "host", "enable_expert_parallel", "enforce_eager")
SGLANG_NAMES = ("model_path", "tp_size", "ep_size", "dp_size", "pp_size", "mem_fraction_static",
                "max_running_requests", "context_length", "port", "enable_ep_moe", "disable_cuda_graph",
                "cuda_graph_max_bs", "cuda_graph_bs")
PY_VALUES = st.one_of(
    NUMBERS, NUMBERS.map(repr),
    st.sampled_from(["True", "False", "None", "[1, 2]", "{'decode': {'backend': 'disabled'}}", "float('inf')",
                     "[" + "9" * 5000 + "]", "(1e999,)"]),
    st.sampled_from(HOSTILE).map(repr))


@st.composite
def args_lines(draw) -> list[str]:
    """One server's args as its log states them, values drawn from PY_VALUES."""
    form = draw(st.sampled_from(["vllm", "sglang-repr", "sglang-dict", "llama.cpp"]))
    if form == "llama.cpp":
        number = draw(st.one_of(st.sampled_from(["9" * 5000, "0", "4"]), st.integers(0, 10 ** 40).map(str)))
        return ["load_model: loading model 'm.gguf'",
                f"load_model: initializing, n_slots = {draw(st.sampled_from([number, '4']))}, "
                f"n_ctx_slot = {draw(st.sampled_from([number, '1024']))}, kv_unified = 'false'",
                f"llama_context: n_ctx = {number}", "llama_context: flash_attn = enabled",
                f"main: server is listening on http://127.0.0.1:{draw(st.sampled_from([number, '8080']))} - starting"]
    names = VLLM_NAMES if form == "vllm" else SGLANG_NAMES
    chosen = draw(st.lists(st.sampled_from(names), min_size=1, max_size=len(names), unique=True))
    pairs = [(name, draw(PY_VALUES)) for name in chosen]
    if form == "sglang-repr":
        body = ", ".join(f"{k}={v}" for k, v in pairs)
        return [f"[2025-06-02 13:58:01] server_args=ServerArgs({body})"]
    body = "{" + ", ".join(f"'{k}': {v}" for k, v in pairs) + "}"
    if form == "vllm":
        return [f"INFO 05-11 10:00:01 [cli_args.py:325] non-default args: {body}"]
    return [f"[2025-06-02 13:58:01] server_args={body}"]


@FUZZ
@given(args_lines())
def test_an_args_line_gives_flags_that_can_be_shown_compared_and_saved(lines):
    from console.servers.launch import EffectiveReader, compare, effective_from_log, parse_script, show
    from console.servers.launch.table import UNREADABLE
    from console.servers.triage import Triage

    found = effective_from_log(lines)
    reader, triage = EffectiveReader(), Triage()
    for line in lines:   # what the monitor does with every line
        reader.feed(line)
        triage.feed(line)
    triage.result()
    if found is None:
        return
    for key, value in found.flags.items():
        show(value)   # printable text (the screens clean it at their one boundary, console.safe_text)
        if isinstance(value, float):
            assert math.isfinite(value), (key, value)
    json.dumps(found.flags, allow_nan=False)   # the launch record keeps them
    for name in found.unreadable:   # a log's own name, or (llama.cpp's) the table's
        assert found.raw.get(name) == UNREADABLE or found.flags.get(name) == UNREADABLE or (
            name in found.raw and UNREADABLE in found.flags.values()), name
    script = parse_script("python -m sglang.launch_server --model-path m --tp-size 2 --port 30000\n", "s.sh")
    for check in compare(script, found.flags):
        assert isinstance(check.mismatch, bool)


# ---- lines of any length ------------------------------------------------------------------------

LIMIT = 64   # the stream's line limit, shrunk so that long lines are common


@FUZZ
@given(st.lists(st.one_of(st.binary(max_size=40), st.binary(min_size=60, max_size=400),
                          st.sampled_from([b"\n", b"\r\n", b"\xff\xfe", b"x" * 65, b"y" * 64])), max_size=30),
       st.integers(1, 97))
def test_a_byte_stream_is_read_as_lines_no_longer_than_the_limit(pieces, chunk):
    from console.hosts import base

    data = b"".join(pieces)
    expected = data.split(b"\n")
    complete = [line + b"\n" for line in expected[:-1]] + ([expected[-1]] if expected[-1] else [])

    async def read() -> list[tuple[bytes, int, bool]]:
        reader = asyncio.StreamReader(limit=LIMIT)
        for at in range(0, len(data), chunk):   # the bytes arrive in pieces, as from a pipe
            reader.feed_data(data[at:at + chunk])
        reader.feed_eof()
        got = []
        while True:
            line = await base.bounded_line(reader)
            if not line[0]:
                return got
            got.append(line)

    saved = base.LINE_LIMIT
    base.LINE_LIMIT = LIMIT
    try:
        got = asyncio.run(read())
    finally:
        base.LINE_LIMIT = saved
    assert [length for _, length, _ in got] == [len(line) for line in complete]
    for (kept, length, ended), line in zip(got, complete):
        assert ended == line.endswith(b"\n")
        if length <= LIMIT + ended:
            assert kept == line
        else:
            assert kept == line[:LIMIT]
