"""Kimi-K2.5: a real config with compressed-tensors INT4 experts and `re:` ignore lists, and its real checkpoint.

The config and the checkpoint's tensor table (every tensor group with its
shape and dtype, 208,550 tensors) are as a public model report lists them
(tests/fixtures/roofline-mechanisms/SOURCES.tsv). This is the model the
issue describes: the `re:` patterns keep attention, shared experts and the
dense MLP in BF16, and symmetric INT4 in groups of 32 costs 0.5625 B/param.
The expanded table is the checkpoint's headers: the witness must agree with
the config model, and a config that hides the ignore list must be caught.
"""
from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from console import roofline
from console.roofline.shard_headers import CheckpointHeaders, Tensor

HERE = Path(__file__).parent / "fixtures" / "roofline-mechanisms"
_BYTES = {"BF16": 2, "F32": 4, "I32": 4}


def _headers() -> CheckpointHeaders:
    out = CheckpointHeaders(source="Kimi-K2.5 (tensor table)", shards=64)
    for line in (HERE / "Kimi-K2.5.weights.tsv").read_text().splitlines():
        if not line or line.startswith("#"):
            continue
        pattern, shape_text, dtype = line.split("\t")
        shape = tuple(int(v) for v in shape_text.split(","))
        names = [pattern]
        while any("{" in n for n in names):
            expanded = []
            for n in names:
                m = re.search(r"\{(\d+)-(\d+)\}", n)
                expanded += [n[:m.start()] + str(i) + n[m.end():] for i in range(int(m.group(1)), int(m.group(2)) + 1)]
            names = expanded
        out.tensors += [Tensor(n, dtype, _BYTES[dtype] * math.prod(shape), shape) for n in names]
    return out


@pytest.fixture(scope="module")
def headers():
    return _headers()


def test_the_table_is_the_whole_checkpoint(headers):
    assert len(headers.tensors) == 208_550
    assert headers.total_bytes / 1e9 == pytest.approx(554.27 * 2**30 / 1e9, rel=1e-4)   # "554.27 GB" (GiB)


def test_re_ignore_patterns_and_symmetric_int4_group_32():
    facts = roofline.load_model(HERE / "Kimi-K2.5.config.json")
    assert any("vision_config" in a for a in facts.assumptions)
    r = roofline.compute(facts, "H100 SXM", 8)
    scheme = r.setup.scheme
    assert scheme.method == "int4" and scheme.weight_bytes == pytest.approx(0.5 + 2 / 32)       # 0.5625
    for kept in ("model.layers.5.self_attn.q_b_proj", "model.layers.5.mlp.shared_experts",
                 "model.layers.0.mlp.gate_proj", "lm_head"):
        assert scheme.is_excluded(kept), kept
    assert not scheme.is_excluded("model.layers.5.mlp.experts")
    assert not any("match no module" in w for w in r.warnings())


@pytest.mark.slow
def test_the_checkpoint_agrees_with_the_config_model(headers):
    facts = roofline.load_model(HERE / "Kimi-K2.5.config.json")
    with_ck = roofline.compute(facts, "H100 SXM", 8, context=0, checkpoint=headers)
    config_only = roofline.compute(facts, "H100 SXM", 8, context=0)
    w = with_ck.setup.witness
    assert w.disagreements == []
    assert w.dtype_by_class["routed_experts"] == "I32" and w.dtype_by_class["attention"] == "BF16"
    assert w.left_out["other_towers"] > 0 and w.unplaced_bytes == 0
    # the step: the headers and the config model agree to well within 1%
    assert with_ck.at(1).ideal_weight_bytes == pytest.approx(config_only.at(1).ideal_weight_bytes, rel=0.01)
    assert w.total_bytes == pytest.approx(config_only.setup.totals.stored_bytes_all, rel=0.001)


@pytest.mark.slow
def test_a_config_that_drops_the_ignore_list_is_caught_by_the_checkpoint(headers):
    doc = json.loads((HERE / "Kimi-K2.5.config.json").read_text())
    for qc in (doc["quantization_config"], doc["text_config"]["quantization_config"]):
        qc["ignore"] = ["lm_head"]            # the old reading: the re: patterns matched nothing
    facts = roofline.facts_from_config(doc, name="Kimi-K2.5")
    r = roofline.compute(facts, "H100 SXM", 8, context=0, checkpoint=headers)
    text = " | ".join(r.warnings())
    assert "config says 4-bit attention, checkpoint has BF16 attention" in text
    assert "config says 4-bit shared experts, checkpoint has BF16 shared experts" in text
    right = roofline.compute(roofline.load_model(HERE / "Kimi-K2.5.config.json"), "H100 SXM", 8, context=0)
    assert r.at(1).ideal_weight_bytes == pytest.approx(right.at(1).ideal_weight_bytes, rel=0.01)  # headers won
