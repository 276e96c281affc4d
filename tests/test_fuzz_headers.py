"""Fuzzing safetensors headers: whatever a shard, an index or a host's listing holds, the reader either
gives tensors within the bounds of a real checkpoint or refuses with one RooflineError, quickly.

Headers are generated as JSON documents (tensor entries whose dtype, shape and
offsets are right, wrong in kind, negative, huge or deeply nested), as real
headers with bytes spliced in, and as raw shard files with any declared
length. What parses goes on through the witness and the roofline itself,
where a number from a header must not overflow or divide by zero. 200 inputs
per test (1,000 with GPUDECK_FUZZ=nightly), derandomised.
"""
from __future__ import annotations

import base64
import json
import math
import struct

from hypothesis import example, given
from hypothesis import strategies as st

from console import roofline
from console.roofline.checkpoint import witness_from_headers
from console.roofline.remote_headers import parse_fetched, parse_listing
from console.roofline.shard_headers import (MAX_BYTES, MAX_DIMS, MAX_ELEMENTS, CheckpointHeaders, elements,
                                            parse_header, read_local)
from tests.fuzz_budget import fuzz_settings

fuzzed = fuzz_settings()

CONFIG = {"architectures": ["LlamaForCausalLM"], "model_type": "llama", "hidden_size": 64, "num_hidden_layers": 2,
          "num_attention_heads": 4, "num_key_value_heads": 2, "head_dim": 16, "vocab_size": 256,
          "intermediate_size": 128, "torch_dtype": "bfloat16", "tie_word_embeddings": False, "rms_norm_eps": 1e-6}
NAMES = ["model.embed_tokens.weight", "lm_head.weight", "model.norm.weight",
         "model.layers.0.self_attn.q_proj.weight", "model.layers.1.mlp.down_proj.weight",
         "model.layers.1.mlp.experts.3.up_proj.weight_scale_inv", "model.layers.7.mlp.gate_proj.weight"]
REAL = json.dumps({"__metadata__": {"format": "pt"},
                   "model.embed_tokens.weight": {"dtype": "BF16", "shape": [256, 64], "data_offsets": [0, 32768]},
                   "model.layers.0.self_attn.q_proj.weight": {"dtype": "BF16", "shape": [64, 64],
                                                              "data_offsets": [32768, 40960]}}).encode()

EDGES = [0, 1, 2**31, 2**48, 2**48 + 1, 2**50, 2**50 + 1, 2**62, 2**63, 2**64, 10**400]
COUNTS = st.one_of(st.integers(0, 4096), st.integers(-(2**70), 2**70), st.sampled_from(EDGES + [-1]))
LEAF = st.one_of(st.none(), st.booleans(), COUNTS, st.floats(allow_nan=False), st.text(max_size=12))
JSON_VALUE = st.recursive(LEAF, lambda inner: st.one_of(st.lists(inner, max_size=4),
                                                       st.dictionaries(st.text(max_size=8), inner, max_size=4)),
                          max_leaves=10)
SHAPES = st.one_of(st.lists(COUNTS, max_size=MAX_DIMS + 4), st.lists(st.sampled_from(EDGES[:4]), max_size=40),
                   JSON_VALUE)
OFFSETS = st.one_of(st.lists(COUNTS, min_size=2, max_size=2).map(sorted), st.lists(COUNTS, max_size=3), JSON_VALUE)
DTYPES = st.one_of(st.sampled_from(["BF16", "F16", "F32", "F8_E4M3", "I8", "U8", "I32", "F4", "BOOL"]), JSON_VALUE)
ENTRY = st.one_of(st.fixed_dictionaries({"dtype": DTYPES, "shape": SHAPES, "data_offsets": OFFSETS}), JSON_VALUE)
DOCS = st.one_of(st.dictionaries(st.one_of(st.sampled_from(NAMES), st.text(max_size=30)), ENTRY, max_size=6),
                 JSON_VALUE)


def _splice(edits: list[tuple[int, int, bytes]]) -> bytes:
    out = bytearray(REAL)
    for pos, cut, insert in edits:
        at = pos % (len(out) + 1)
        out[at:at + cut] = insert
    return bytes(out)


NESTED = st.sampled_from([10, 999, 1000, 5000, 100_000]).flatmap(
    lambda depth: st.sampled_from([b"[" * depth + b"]" * depth, b'{"a":' + b'{"b":' * depth + b"1" + b"}" * depth + b"}",
                                   b'{"t":{"dtype":"BF16","shape":' + b"[" * depth + b"]" * depth + b',"data_offsets":[0,2]}}']))
HEADERS = st.one_of(DOCS.map(lambda doc: json.dumps(doc).encode()),
                    st.lists(st.tuples(st.integers(0, 400), st.integers(0, 20),
                                       st.one_of(st.binary(max_size=12),
                                                 st.sampled_from([b"[", b"{", b"-", b"1" * 500, b"\xff", b"\x00"]))),
                             max_size=6).map(_splice),
                    NESTED, st.binary(max_size=300))

FACTS = roofline.facts_from_config(CONFIG, name="tiny", where="fuzz")


def _within_bounds(tensors) -> None:
    for t in tensors:
        assert len(t.shape) <= MAX_DIMS and elements(t.shape) is not None and elements(t.shape) <= MAX_ELEMENTS
        assert 0 <= t.nbytes <= MAX_BYTES and isinstance(t.dtype, str)


@fuzzed
@given(HEADERS)
def test_a_header_gives_tensors_in_bounds_or_one_refusal(raw):
    try:
        tensors = parse_header(raw, "model.safetensors")
    except roofline.RooflineError as exc:
        assert "\n" not in str(exc) and str(exc).startswith("checkpoint shard model.safetensors: ")
        return
    _within_bounds(tensors)
    headers = CheckpointHeaders(source="fuzz", tensors=tensors, shards=1)
    try:   # what a header let through must not overflow or divide by zero further on
        witness_from_headers(headers, FACTS.num_layers)
        roofline.compute(FACTS, "H100 SXM", 1, checkpoint=headers).to_json()
    except roofline.RooflineError:
        pass


@fuzzed
@given(st.one_of(st.integers(0, 2**64 - 1), st.sampled_from([0, 1, 2**25, 2**25 + 1, 2**63, 2**64 - 1])),
       HEADERS, st.booleans())
def test_a_shard_file_of_any_declared_length_is_read_or_refused(tmp_path_factory, declared, raw, honest):
    folder = tmp_path_factory.mktemp("m")
    length = len(raw) if honest else declared
    (folder / "model.safetensors").write_bytes(struct.pack("<Q", length) + raw)
    try:
        headers = read_local(folder)
    except roofline.RooflineError as exc:
        assert "\n" not in str(exc)
        return
    _within_bounds(headers.tensors)
    assert headers.shards == 1


def _b64(text: str) -> str:
    return base64.b64encode(text.encode()).decode()


LISTING_LINES = st.one_of(
    st.builds(lambda name, n: f"LENGTH {_b64(name)} {n}", st.one_of(st.sampled_from(["model.safetensors", "a b.safetensors",
                                                                                   "../x.safetensors"]), st.text(max_size=20)),
              st.one_of(COUNTS, st.text(max_size=6))),
    st.builds(lambda name: f"SHORT {_b64(name)}", st.text(max_size=20)),
    st.builds(lambda doc: f"INDEX {base64.b64encode(json.dumps(doc).encode()).decode()}",
              st.one_of(JSON_VALUE, st.fixed_dictionaries({"weight_map": st.dictionaries(st.text(max_size=8), JSON_VALUE,
                                                                                         max_size=3),
                                                           "metadata": JSON_VALUE}))),
    st.sampled_from(["NODIR", "INDEX ***", "LENGTH", "INDEX " + _b64("[" * 5000 + "]" * 5000)]),
    st.text(max_size=40))


@fuzzed
@given(st.lists(LISTING_LINES, max_size=8).map("\n".join))
def test_a_hosts_listing_gives_sane_lengths_or_one_refusal(output):
    try:
        names, total, lengths = parse_listing(output, "h:/m")
    except roofline.RooflineError as exc:
        assert "\n" not in str(exc)
        return
    assert total is None or 0 <= total <= MAX_BYTES
    assert all(isinstance(n, str) and "/" not in n and " " not in n for n in lengths)
    assert all(n is None or isinstance(n, int) for n in lengths.values())


@fuzzed
@given(HEADERS, st.sampled_from(["ok", "cut", "garbled", "absent"]))
def test_a_fetched_batch_gives_each_shards_tensors_or_one_refusal(raw, how):
    body = {"ok": base64.b64encode(raw).decode(), "cut": base64.b64encode(raw[:-1]).decode(),
            "garbled": "%%" + base64.b64encode(raw).decode(), "absent": ""}[how]
    output = "" if how == "absent" else f"SHARD model.safetensors {body}\n"
    try:
        found = parse_fetched(output, [("model.safetensors", len(raw))], "h:/m")
    except roofline.RooflineError as exc:
        assert "\n" not in str(exc)
        return
    _within_bounds(found["model.safetensors"])


@fuzzed
@given(st.lists(st.one_of(st.integers(0, 2**20), st.sampled_from(EDGES)), max_size=MAX_DIMS + 8))
@example([2, 2**48, 0])   # a zero dim makes no elements, however large the product before it
def test_element_counts_stop_at_the_bound(shape):
    count = elements(shape)
    exact = math.prod(shape) if all(d <= MAX_ELEMENTS for d in shape) else None
    if exact is not None and exact <= MAX_ELEMENTS:
        assert count == exact
    else:
        assert count is None
