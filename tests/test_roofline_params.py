"""Parameter counts of the thirteen shared configs against the figures their makers published."""
from __future__ import annotations

import pytest

from console import roofline

# (config, published total, published active, the maker's convention for "active")
# Conventions: "head" = output head counted, input table not (DeepSeek, Kimi, gpt-oss);
# "with_embedding" = both tables counted (Qwen, Mistral, dense Llama);
# "no_tables" = neither table (GLM: 32B for GLM-4.5, 40B for GLM-5).
PUBLISHED = [
    ("GLM-5", 744e9, 40e9, "no_tables"),
    ("GLM-5-NVFP4", 744e9, 40e9, "no_tables"),
    ("DeepSeek-V3", 671e9, 37e9, "head"),
    ("Kimi-K2-Instruct", 1.04e12, 32e9, "head"),
    ("Llama-3.1-8B", 8.03e9, 8.03e9, "with_embedding"),
    ("Llama-3.1-70B", 70.6e9, 70.6e9, "with_embedding"),
    ("Llama-3.1-405B", 405e9, 405e9, "with_embedding"),
    ("Mixtral-8x7B-v0.1", 46.7e9, 12.9e9, "with_embedding"),
    ("Qwen3-235B-A22B", 235e9, 22e9, "with_embedding"),
    ("Qwen3-30B-A3B", 30.5e9, 3.3e9, "with_embedding"),
    ("gpt-oss-120b", 117e9, 5.1e9, "head"),
    ("gpt-oss-20b", 21e9, 3.6e9, "head"),
]


def _facts(shared_dir, name):
    return roofline.load_model(shared_dir / "model-configs" / f"{name}.json")


def test_every_shared_config_is_covered(shared_dir):
    names = {p.stem for p in (shared_dir / "model-configs").glob("*.json") if "quant_config" not in p.name}
    assert names == {row[0] for row in PUBLISHED}


@pytest.mark.parametrize("name,total,active,convention", PUBLISHED, ids=[r[0] for r in PUBLISHED])
def test_total_params_within_2pct_of_published(shared_dir, name, total, active, convention):
    facts = _facts(shared_dir, name)
    assert facts.total_params == pytest.approx(total, rel=0.02)


@pytest.mark.parametrize("name,total,active,convention", PUBLISHED, ids=[r[0] for r in PUBLISHED])
def test_active_params_within_2pct_by_makers_convention(shared_dir, name, total, active, convention):
    facts = _facts(shared_dir, name)
    counted = {"head": facts.active_params,
               "with_embedding": facts.active_params_with_embedding,
               "no_tables": facts.active_params_without_embeddings}[convention]
    assert counted == pytest.approx(active, rel=0.02)


def test_active_params_leaves_out_the_input_table_and_counts_the_head(shared_dir):
    facts = _facts(shared_dir, "Llama-3.1-8B")
    table = 128256 * 4096
    assert facts.active_params_with_embedding - facts.active_params == table
    assert facts.active_params - facts.active_params_without_embeddings == table


def test_mtp_layers_are_left_out(shared_dir):
    facts = _facts(shared_dir, "DeepSeek-V3")
    assert facts.mtp_layers_excluded == 1
    assert facts.num_layers == 61
    assert facts.dense_layers == 3 and facts.moe_layers == 58


def test_glm5_has_sparse_attention_indexer(shared_dir):
    facts = _facts(shared_dir, "GLM-5")
    indexer = [c for c in facts.components if c.role == "indexer"]
    assert len(indexer) == 3 * 78
    assert facts.attention.index_topk == 2048


def test_tied_embeddings_are_stored_once_and_read_as_head():
    doc = {"hidden_size": 64, "num_hidden_layers": 2, "num_attention_heads": 4, "num_key_value_heads": 2,
           "vocab_size": 1000, "intermediate_size": 128, "tie_word_embeddings": True}
    tied = roofline.facts_from_config(doc)
    untied = roofline.facts_from_config({**doc, "tie_word_embeddings": False})
    assert untied.total_params - tied.total_params == 1000 * 64
    assert tied.active_params == untied.active_params  # the head is read either way


@pytest.mark.parametrize("missing", ["hidden_size", "num_hidden_layers", "num_attention_heads", "vocab_size"])
def test_partial_config_names_the_missing_field(shared_dir, missing):
    import json

    doc = json.loads((shared_dir / "model-configs" / "Llama-3.1-8B.json").read_text())
    del doc[missing]
    with pytest.raises(roofline.RooflineError, match=f"'{missing}'"):
        roofline.facts_from_config(doc)


def test_moe_without_topk_names_the_field(shared_dir):
    import json

    doc = json.loads((shared_dir / "model-configs" / "Mixtral-8x7B-v0.1.json").read_text())
    del doc["num_experts_per_tok"]
    with pytest.raises(roofline.RooflineError, match="num_experts_per_tok"):
        roofline.facts_from_config(doc)


def test_mla_without_rope_dim_names_the_field(shared_dir):
    import json

    doc = json.loads((shared_dir / "model-configs" / "DeepSeek-V3.json").read_text())
    del doc["qk_rope_head_dim"]
    with pytest.raises(roofline.RooflineError, match="qk_rope_head_dim"):
        roofline.facts_from_config(doc)
