"""The roofline on real Hugging Face configs (tests/fixtures/model-configs, sources in SOURCES.tsv).

Parameter counts against the figures the makers published, and the cases
that used to be confidently wrong: Gemma's tied default, Llama-4's
interleaved MoE, hybrid linear-attention and Mamba models, sliding windows,
and the configs the roofline must refuse by name.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from console import roofline
from console.roofline.step import kv_per_sequence

FIXTURES = Path(__file__).parent / "fixtures" / "model-configs"

# (file stem, published total, published active, convention of the active figure)
# Figures are strings as published: a figure given as "9" is read as 8.5-9.5, "2.61" as 2.605-2.615.
# Conventions: "with_embedding" both tables counted; "head" the output head but not the input table;
# "no_tables" neither table; "dense" active = total.
PUBLISHED = [
    ("CodeLlama-34b", "33.7", None, "dense"),
    ("DeepSeek-V2-Lite", "15.7", None, "head"),   # "2.4B activated" lies between head (2.45) and no tables (2.24)
    ("Llama-2-7b", "6.74", None, "dense"),
    ("Llama-2-13b", "13.0", None, "dense"),
    ("Llama-2-70b", "69.0", None, "dense"),
    ("Llama-3.2-1B", "1.24", None, "dense"),
    ("Llama-3.2-3B", "3.21", None, "dense"),
    ("Llama-4-Scout-17B-16E", "109", "17", "with_embedding"),
    ("Llama-4-Maverick-17B-128E", "400", "17", "with_embedding"),
    ("Mistral-7B-v0.3", "7.25", None, "dense"),
    ("NVIDIA-Nemotron-Nano-9B-v2", "9", None, "dense"),
    ("Nemotron-H-8B-Base-8K", "8", None, "dense"),
    ("OLMo-2-1124-7B", "7.30", None, "dense"),
    ("OLMo-2-1124-13B", "13.7", None, "dense"),
    ("Phi-4-mini-instruct", "3.84", None, "dense"),
    ("Qwen1.5-MoE-A2.7B", "14.3", "2.7", "with_embedding"),
    ("Qwen2-0.5B", "0.49", None, "dense"),
    ("Qwen2-1.5B", "1.54", None, "dense"),
    ("Qwen2-7B", "7.62", None, "dense"),
    ("Qwen2.5-3B", "3.09", None, "dense"),
    ("Qwen2.5-7B", "7.61", None, "dense"),
    ("Qwen2.5-14B", "14.7", None, "dense"),
    ("Qwen2.5-32B", "32.5", None, "dense"),
    ("Qwen3-0.6B", "0.6", None, "dense"),
    ("Qwen3-1.7B", "1.7", None, "dense"),
    ("Qwen3-4B", "4.0", None, "dense"),
    ("Qwen3-8B", "8.2", None, "dense"),
    ("Qwen3-14B", "14.8", None, "dense"),
    ("Qwen3-32B", "32.8", None, "dense"),
    ("Qwen3-Next-80B-A3B", "80", "3", "no_tables"),
    ("Qwen3.5-27B", "27", None, "dense"),
    ("SmolLM2-135M", "0.135", None, "dense"),
    ("TinyLlama-1.1B-Chat-v1.0", "1.1", None, "dense"),
    ("gemma-2b", "2.51", None, "dense"),
    ("gemma-2-2b", "2.61", None, "dense"),
    ("gemma-2-9b", "9.24", None, "dense"),
    ("gemma-2-27b", "27.2", None, "dense"),
    ("gemma-3-1b-it", "1.0", None, "dense"),
    ("gemma-3-27b", "27", None, "dense"),
]
REFUSED = [
    ("Llama-3_3-Nemotron-Super-49B-v1", ("DeciLMForCausalLM", "block_configs")),
    ("gemma-4-toy-moe", ("Gemma4ForConditionalGeneration", "top_k_experts")),
]


def _facts(stem: str) -> roofline.ModelFacts:
    return roofline.load_model(FIXTURES / f"{stem}.json")


def _within_rounding(value: float, published: str) -> bool:
    """True when `value` (in billions) rounds to the published figure (at least 2% slack)."""
    figure = float(published)
    decimals = len(published.split(".")[1]) if "." in published else 0
    slack = max(0.5 * 10 ** -decimals, 0.02 * figure)
    return abs(value / 1e9 - figure) <= slack


def test_every_fixture_is_listed_with_a_source():
    from tests.test_roofline_collection import COLLECTION

    stems = {p.stem for p in FIXTURES.glob("*.json")}
    assert stems == {r[0] for r in PUBLISHED} | {r[0] for r in REFUSED} | {r[0] for r in COLLECTION if r[1] == FIXTURES}
    sources = (FIXTURES / "SOURCES.tsv").read_text().splitlines()
    listed = {line.split("\t")[0].removesuffix(".json") for line in sources if line and not line.startswith(("#", "file\t"))}
    assert listed == stems
    for line in sources[2:]:
        file, repo, path, commit, _where = line.split("\t")
        assert "/" in repo and path and len(commit) == 40


@pytest.mark.parametrize("stem,total,active,convention", PUBLISHED, ids=[r[0] for r in PUBLISHED])
def test_total_params_match_published(stem, total, active, convention):
    facts = _facts(stem)
    assert _within_rounding(facts.total_params, total), facts.total_params


@pytest.mark.parametrize("stem,total,active,convention", [r for r in PUBLISHED if r[2]], ids=[r[0] for r in PUBLISHED if r[2]])
def test_active_params_match_published(stem, total, active, convention):
    facts = _facts(stem)
    counted = {"head": facts.active_params, "with_embedding": facts.active_params_with_embedding,
               "no_tables": facts.active_params_without_embeddings}[convention]
    assert _within_rounding(counted, active), counted


@pytest.mark.parametrize("stem,needles", REFUSED, ids=[r[0] for r in REFUSED])
def test_unsupported_configs_name_architecture_and_feature(stem, needles):
    with pytest.raises(roofline.RooflineError) as err:
        _facts(stem)
    for needle in needles:
        assert needle in str(err.value)
    assert "missing field" not in str(err.value)


# -- Gemma: tied by default ------------------------------------------------------

def test_gemma_config_without_tie_field_uses_the_architecture_default():
    doc = json.loads((FIXTURES / "gemma-2b.json").read_text())
    assert "tie_word_embeddings" not in doc
    facts = roofline.facts_from_config(doc)
    assert facts.tied_embeddings and "gemma default" in facts.tied_source
    untied = roofline.facts_from_config({**doc, "tie_word_embeddings": False})
    assert untied.total_params - facts.total_params == 256_000 * 2048
    # a Llama config that says nothing stays untied (LlamaConfig's default)
    llama = json.loads((FIXTURES / "Llama-2-7b.json").read_text())
    llama.pop("tie_word_embeddings")
    assert not roofline.facts_from_config(llama).tied_embeddings


# -- the input table is read one row per sequence --------------------------------

def test_tied_llama_1b_reads_its_table_once_per_step():
    facts = _facts("Llama-3.2-1B")
    r = roofline.compute(facts, "H100 SXM", 1, context=1024)
    weights = 2 * facts.total_params + 2 * 2048           # the tied table once (as the head), plus one row
    kv = 16 * 2 * 8 * 64 * 2 * 1024
    assert r.single_stream_ideal == pytest.approx(3350e9 / (weights + kv), rel=1e-6)
    old = roofline.compute(facts, "H100 SXM", 1, context=1024, assumptions={"embedding_table_read": True})
    assert old.single_stream_ideal < 0.85 * r.single_stream_ideal   # the table counted twice


def test_embedding_rows_grow_with_the_batch():
    facts = _facts("Qwen3-8B")
    r = roofline.compute(facts, "H100 SXM", 1, context=0, batches=(1, 64))
    row = 4096 * 2
    assert r.at(64).ideal_weight_bytes - r.at(1).ideal_weight_bytes == pytest.approx(63 * row)


# -- Llama-4 --------------------------------------------------------------------

def test_llama4_maverick_interleaves_dense_and_moe_layers_with_a_shared_expert():
    facts = _facts("Llama-4-Maverick-17B-128E")
    assert facts.moe_layers == 24 and facts.dense_layers == 24
    dense: dict[int, int] = {}
    for c in facts.components:
        if c.role == "mlp":
            dense[c.layer] = dense.get(c.layer, 0) + c.params
    assert len(dense) == 24 and set(dense.values()) == {3 * 5120 * 16384}   # intermediate_size_mlp
    shared = [c for c in facts.components if c.role == "shared"]
    assert len(shared) == 24 and {c.params for c in shared} == {3 * 5120 * 8192}
    scout = _facts("Llama-4-Scout-17B-16E")
    assert scout.moe_layers == 48 and scout.dense_layers == 0


def test_llama4_chunked_attention_bounds_kv_on_three_of_four_layers():
    facts = _facts("Llama-4-Scout-17B-16E")
    windows = facts.attention.windows
    assert sum(1 for w in windows if w == 8192) == 36 and windows[3] is None


# -- hybrids: KV only for attention layers, a fixed state for the rest --------------

def _kv_bytes(stem: str, context: int) -> float:
    facts = _facts(stem)
    setup = roofline.Setup.build(facts, roofline.find_gpu("H100 SXM"), 8, context=context)
    return kv_per_sequence(setup, per_gpu=False)[0]


def test_qwen3_next_kv_is_for_its_12_attention_layers_plus_a_fixed_state():
    facts = _facts("Qwen3-Next-80B-A3B")
    assert facts.attention.kinds.count("attention") == 12 and facts.attention.kinds.count("linear") == 36
    per_token = 12 * 2 * 2 * 256 * 2                     # layers x K,V x kv heads x head_dim x BF16
    state = 36 * (32 * 128 * 128 + (2 * 2048 + 4096) * 3) * 2  # heads x dk x dv recurrent state + conv tail
    assert _kv_bytes("Qwen3-Next-80B-A3B", 4096) == pytest.approx(4096 * per_token + state)
    assert _kv_bytes("Qwen3-Next-80B-A3B", 8192) - _kv_bytes("Qwen3-Next-80B-A3B", 4096) == pytest.approx(4096 * per_token)


def test_nemotron_h_kv_is_for_its_4_attention_layers():
    facts = _facts("Nemotron-H-8B-Base-8K")
    kinds = facts.attention.kinds
    assert (kinds.count("attention"), kinds.count("mamba"), kinds.count("none")) == (4, 24, 24)
    per_token = 4 * 2 * 8 * 128 * 2
    assert _kv_bytes("Nemotron-H-8B-Base-8K", 8192) - _kv_bytes("Nemotron-H-8B-Base-8K", 4096) == pytest.approx(4096 * per_token)
    r = roofline.compute(facts, "H100 SXM", 1)
    assert "Mamba-2" in r.assumptions()["layer_mixers"]


# -- sliding windows ------------------------------------------------------------------

def test_gemma3_sliding_window_pattern_keeps_1024_tokens_on_five_of_six_layers():
    facts = _facts("gemma-3-27b")
    windows = facts.attention.windows
    assert sum(1 for w in windows if w == 1024) == 52 and sum(1 for w in windows if w is None) == 10
    per_token_layer = 2 * 16 * 128 * 2
    expected = per_token_layer * (10 * 32768 + 52 * 1024)
    assert _kv_bytes("gemma-3-27b", 32768) == pytest.approx(expected)


def test_gemma2_alternates_sliding_and_global_layers():
    windows = _facts("gemma-2-9b").attention.windows
    assert windows[0] == 4096 and windows[1] is None and sum(1 for w in windows if w) == 21


def test_layer_types_decide_the_windows(shared_dir):
    facts = roofline.load_model(shared_dir / "model-configs" / "gpt-oss-20b.json")
    assert sum(1 for w in facts.attention.windows if w == 128) == 12


# -- refusals of features the model does not count ------------------------------------

@pytest.mark.parametrize("extra,needle", [
    ({"model_type": "mamba", "architectures": ["MambaForCausalLM"], "ssm_state_size": 16}, "Mamba/SSM"),
    ({"layer_types": ["full_attention", "mystery_attention"]}, "mystery_attention"),
    ({"hybrid_override_pattern": "M?"}, "'?'"),
    ({"attn_type_list": [0, 1]}, "lightning"),
])
def test_unmodelled_features_are_refused_by_name(extra, needle):
    doc = json.loads((FIXTURES / "Qwen2-0.5B.json").read_text())
    doc.update({"num_hidden_layers": 2, **extra})
    with pytest.raises(roofline.RooflineError, match=None) as err:
        roofline.facts_from_config(doc)
    assert needle in str(err.value)


def test_missing_field_names_the_architecture():
    doc = json.loads((FIXTURES / "Qwen2-7B.json").read_text())
    del doc["intermediate_size"]
    with pytest.raises(roofline.RooflineError, match=r"Qwen2ForCausalLM.*'intermediate_size'"):
        roofline.facts_from_config(doc)
