"""Properties of the ideal bound that must hold for every model, GPU and layout."""
from __future__ import annotations

import functools
from tests.conftest import SHARED

from hypothesis import given, settings, strategies as st

from console import roofline

CONFIGS = SHARED / "model-configs"
NAMES = ["Llama-3.1-8B", "Mixtral-8x7B-v0.1", "Qwen3-30B-A3B", "gpt-oss-20b", "DeepSeek-V3", "GLM-5"]
GPUS = ["H100 SXM", "L40S", "RTX PRO 6000 Blackwell", "B200", "MI300X", "RTX 4090"]


@functools.lru_cache(maxsize=None)
def facts(name):
    return roofline.load_model(CONFIGS / f"{name}.json")


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), gpu=st.sampled_from(GPUS), count=st.integers(1, 16),
       more=st.integers(1, 16), batch=st.integers(1, 1024), context=st.integers(0, 32768),
       quant=st.sampled_from(["bf16", "fp8", "nvfp4", "int4-awq"]))
def test_more_gpus_never_lower_the_ideal(name, gpu, count, more, batch, context, quant):
    f = facts(name)
    fewer = roofline.compute(f, gpu, count, tp=1, quant=quant, context=context, batches=(batch,))
    many = roofline.compute(f, gpu, count + more, tp=1, quant=quant, context=context, batches=(batch,))
    assert many.tok_s(batch, "ideal") >= fewer.tok_s(batch, "ideal") * (1 - 1e-12)


@settings(max_examples=60, deadline=None)
@given(name=st.sampled_from(NAMES), gpu=st.sampled_from(GPUS), count=st.sampled_from([1, 2, 4, 8]),
       batch=st.integers(1, 2048), step=st.integers(1, 512), context=st.integers(0, 32768))
def test_higher_batch_never_lowers_total_tok_s_at_the_ideal(name, gpu, count, batch, step, context):
    r = roofline.compute(facts(name), gpu, count, context=context, batches=(batch, batch + step))
    assert r.tok_s(batch + step, "ideal") >= r.tok_s(batch, "ideal") * (1 - 1e-12)


@settings(max_examples=40, deadline=None)
@given(name=st.sampled_from(NAMES), gpu=st.sampled_from(GPUS), tp=st.sampled_from([1, 2, 4, 8]),
       batch=st.integers(1, 512))
def test_realistic_never_beats_ideal(name, gpu, tp, batch):
    r = roofline.compute(facts(name), gpu, 8, tp=tp, batches=(batch,))
    assert r.tok_s(batch, "realistic") <= r.tok_s(batch, "ideal") * (1 + 1e-9)
