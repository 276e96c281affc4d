"""The checkpoint first: keys that cannot change bytes never block, a checkpoint's tensors settle the
weight shapes a config leaves open, and weights are priced in the dtype the server loads them in.

The configs are real (tests/fixtures/model-configs, tests/fixtures/roofline-corpus, sources in their
SOURCES.tsv); the checkpoints are real safetensors files written here with the `safetensors` package.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from console import roofline
from console.roofline.errors import RooflineError
from tests.cli import gpudeck
from tests.test_roofline_checkpoint import CONFIG, write_checkpoint

FIXTURES = Path(__file__).parent / "fixtures"
CONFIGS = FIXTURES / "model-configs"
CORPUS = FIXTURES / "roofline-corpus"


def _doc(stem: str) -> dict:
    return json.loads((CONFIGS / f"{stem}.json").read_text())


def _total(doc: dict, **kw) -> int:
    return roofline.facts_from_config(doc, **kw).total_params


# Keys of each kind that cannot change bytes per token, none of them listed anywhere in the code:
# the rule is the kind (a GenerationConfig field, a token id, a training knob, a norm flag, another
# spelling of a field that was read), so keys nobody has seen yet pass too.
HARMLESS = {
    "num_beams": 4, "num_beam_groups": 2, "num_return_sequences": 3, "top_k": 20, "typical_p": 0.9,
    "no_repeat_ngram_size": 3, "dola_layers": "high", "max_new_tokens": 512,                     # generation settings
    "image_token_id": 151655, "media_placeholder_token_id": 163605, "sep_token_ids": [7, 8],     # token ids
    "expert_balance_loss_weight": 0.01, "moe_z_loss_coeff_per_layer": [0.1, 0.2],                # training knobs
    "use_post_attention_layer_norm": True, "use_sandwich_rmsnorm": True,                        # norm flags
}


def test_keys_that_cannot_change_bytes_never_block_and_change_nothing():
    doc = _doc("Llama-3.2-3B")
    assert _total({**doc, **HARMLESS}) == _total(doc)


def test_use_qk_norm_on_a_qwen3_moe_changes_nothing(shared_dir):
    """Qwen3-Coder-480B's config carries `use_qk_norm`: Qwen3's q/k norms are counted already."""
    doc = json.loads((shared_dir / "model-configs" / "Qwen3-30B-A3B.json").read_text())
    assert _total({**doc, "use_qk_norm": True}) == _total(doc)


def test_use_qk_norm_prices_its_norms_and_never_blocks():
    """Qwen3-Coder-480B (held-back set 1) was refused for `use_qk_norm`: the flag adds norm weights only."""
    doc = _doc("Llama-3.2-3B")
    with_norms = roofline.facts_from_config({**doc, "use_qk_norm": True})
    extra = with_norms.total_params - _total(doc)
    assert extra == doc["num_hidden_layers"] * 2 * (doc["hidden_size"] // doc["num_attention_heads"])


def test_kimi_k25_generation_settings_do_not_block():
    """Kimi-K2.5 (held-back set 2) was refused for num_beams, num_beam_groups, num_return_sequences, top_k."""
    doc = json.loads((FIXTURES / "roofline-mechanisms" / "Kimi-K2.5.config.json").read_text())
    roofline.facts_from_config({**doc, "num_beams": 1, "num_beam_groups": 1, "num_return_sequences": 1, "top_k": 50})


def test_an_older_spelling_of_a_read_field_is_an_alias_not_a_mystery():
    """gemma-2 9B/27B carry `sliding_window_size` beside `sliding_window` (held-back set 1 refused them)."""
    doc = _doc("gemma-2-9b")
    both = roofline.facts_from_config({**doc, "sliding_window_size": doc["sliding_window"]})
    assert both.attention.windows == roofline.facts_from_config(doc).attention.windows
    # the older spelling alone is read as the window, and said
    only_old = {k: v for k, v in doc.items() if k != "sliding_window"} | {"sliding_window_size": 4096}
    facts = roofline.facts_from_config(only_old)
    assert facts.attention.windows[0] == 4096 and facts.attention.windows[1] is None
    # a different value under the other spelling is no alias: it still stops the number
    with pytest.raises(RooflineError, match="sliding_window_size"):
        roofline.facts_from_config({**doc, "sliding_window_size": 8192})


def test_mamba_time_step_rank_does_not_block_nemotron_h():
    """Nemotron-H-56B (held-back set 1) was refused for `time_step_rank`: Mamba-2 has one step size per head."""
    doc = _doc("Nemotron-H-8B-Base-8K")
    assert _total({**doc, "time_step_rank": 256}) == _total(doc)


@pytest.mark.parametrize("key, value", [("extra_dense_block_width", 4096), ("swa_layer_ids", [0, 2, 4])])
def test_a_structural_key_still_blocks_without_a_checkpoint(key, value):
    """An id list of layers is no token id: it names which layers differ."""
    doc = _doc("Llama-3.2-3B")
    with pytest.raises(RooflineError, match=f"'{key}'"):
        roofline.facts_from_config({**doc, key: value})


def _with_unknown_keys(folder: Path, extra: dict) -> Path:
    write_checkpoint(folder)
    (folder / "config.json").write_text(json.dumps({**CONFIG, **extra}))
    return folder / "config.json"


def test_a_tiny_real_checkpoint_with_unknown_weight_keys_is_priced_from_its_headers(tmp_path):
    """Keys of weight shapes nobody models are settled by the tensors: the number is the headers' bytes."""
    unknown = {"expert_hidden_multiplier": 3, "num_dense_blocks_extra": 2}
    with pytest.raises(RooflineError, match="expert_hidden_multiplier"):
        roofline.facts_from_config({**CONFIG, **unknown})          # the config alone cannot price it
    config = _with_unknown_keys(tmp_path / "m", unknown)
    facts = roofline.load_model(config)
    r = roofline.compute(facts, "H100 SXM", 1, context=0)
    assert r.weights_from() == "from the checkpoint"
    headers = facts.headers
    mtp = sum(t.nbytes for t in headers.tensors if t.name.startswith("model.layers.3."))
    assert r.setup.witness.total_bytes == headers.total_bytes - mtp
    said = " ".join(facts.assumptions)
    assert "expert_hidden_multiplier" in said and "settled by the checkpoint's tensors" in said


def test_an_unknown_kv_layout_key_blocks_even_with_the_checkpoint(tmp_path):
    """What the tensors cannot say (the KV cache's layout) still needs the config to be read."""
    config = _with_unknown_keys(tmp_path / "m", {"kv_reuse_stride": 2})
    with pytest.raises(RooflineError, match="'kv_reuse_stride'"):
        roofline.load_model(config)


def test_cli_checkpoint_settles_the_weight_keys_of_a_config_elsewhere(tmp_path):
    config = _with_unknown_keys(tmp_path / "m", {"expert_hidden_multiplier": 3})
    alone = tmp_path / "alone.json"
    alone.write_text(config.read_text())
    refused = gpudeck("roofline", "--model-config", str(alone), "--gpu", "H100 SXM", "--count", "1")
    assert refused.returncode != 0 and "expert_hidden_multiplier" in refused.stderr
    out = gpudeck("roofline", "--model-config", str(alone), "--checkpoint", str(tmp_path / "m"),
                  "--gpu", "H100 SXM", "--count", "1", "--json")
    assert out.returncode == 0, out.stderr
    assert json.loads(out.stdout)["assumptions"]["weights_from"].startswith("from the checkpoint")


# -- the serving dtype -------------------------------------------------------------------------

def _corpus(stem: str) -> dict:
    return json.loads((CORPUS / f"{stem}.json").read_text())


@pytest.mark.parametrize("stem, total_size", [("Reflection-Llama-3.1-70B", 282215219200),
                                              ("granite-3.1-1b-a400m-instruct", 5338513408)])
def test_a_float32_checkpoint_is_priced_at_16_bits_as_dtype_auto_serves_it(stem, total_size):
    """The index's total_size is float32; vLLM and sglang serve it in 16 bits: half the bytes per token."""
    doc = _corpus(stem)
    assert doc["torch_dtype"] == "float32"
    facts = roofline.facts_from_config(doc)
    assert facts.weight_dtype_bytes == 2 and facts.serving_dtype == "bfloat16"
    assert facts.total_params * 4 == pytest.approx(total_size, rel=0.02)      # the checkpoint, as stored
    r = roofline.compute(facts, "H200", 8, context=0)
    assert r.setup.totals.stored_bytes_all == pytest.approx(total_size / 2, rel=0.02)
    assert "--dtype auto" in r.assumptions()["weights_quant"] and "float32" in r.assumptions()["weights_quant"]
    # the launch's --dtype float32 keeps 4 bytes, and says so
    kept = roofline.facts_from_config(doc, serve_dtype="float32")
    assert kept.weight_dtype_bytes == 4 and kept.serving_dtype_source == "--dtype float32"


def test_float32_shards_are_read_at_half_their_bytes_when_served_in_16_bits(tmp_path):
    folder = tmp_path / "m"
    write_checkpoint(folder)
    doc = {**CONFIG, "torch_dtype": "float32"}
    (folder / "config.json").write_text(json.dumps(doc))
    served = roofline.compute(roofline.load_model(folder / "config.json"), "H100 SXM", 1, context=0)
    stored = roofline.compute(roofline.load_model(folder / "config.json", serve_dtype="float32"), "H100 SXM", 1,
                              context=0)
    assert served.setup.witness.total_bytes == stored.setup.witness.total_bytes   # bf16 shards: nothing halves
    f32 = tmp_path / "f32"
    from tests.test_roofline_checkpoint import _tensors

    write_checkpoint(f32, extra={name: ("float32", shape) for name, (_, shape) in _tensors(False).items()})
    (f32 / "config.json").write_text(json.dumps(doc))
    r32 = roofline.compute(roofline.load_model(f32 / "config.json"), "H100 SXM", 1, context=0)
    assert r32.setup.witness.total_bytes == served.setup.witness.total_bytes


def test_the_kv_cache_of_a_float16_model_is_float16_and_says_whose_dtype():
    doc = {**_doc("Llama-3.2-3B"), "torch_dtype": "float16"}
    r = roofline.compute(roofline.facts_from_config(doc), "H200", 1)
    assert r.setup.kv_dtype == "fp16"
    assert r.assumptions()["kv_cache_dtype"] == "fp16"
    assert r.assumptions()["kv_cache_source"] == "model dtype (float16)"
    bf16 = roofline.compute(roofline.facts_from_config({**doc, "torch_dtype": "bfloat16"}), "H200", 1)
    assert bf16.assumptions()["kv_cache_source"] == "model dtype (bfloat16)"


# -- defaults named as assumptions ---------------------------------------------------------------

def test_falcon_feed_forward_defaults_to_4x_hidden_and_says_so():
    """Falcon's config names no feed-forward size (held-back set 3 refused falcon-180B for it): 4 x hidden."""
    doc = _corpus("falcon-40b-instruct")
    assert "ffn_hidden_size" not in doc and "intermediate_size" not in doc
    facts = roofline.facts_from_config(doc)
    assert "'ffn_hidden_size' absent: 32768 assumed (Falcon's feed-forward is 4 x hidden)" in facts.warnings
    up = next(c for c in facts.components if c.path == "model.layers.0.mlp.up_proj")
    assert up.params == 8192 * 32768 and not any(c.path.endswith("gate_proj") for c in facts.components)
    assert facts.total_params == pytest.approx(41.8e9, rel=0.005)   # Falcon-40B's published size


# -- the realistic ceiling from the chip as measured ------------------------------------------------

def test_the_realistic_bound_uses_the_h200_as_measured_and_names_the_measurement(shared_dir):
    """On a real H200 a plain read reaches 4.15 TB/s and a bf16 GEMM 657 TFLOP/s (shared/gpu-measured/H200.md):
    the realistic bound is the ideal one at those rates, not at the datasheet's."""
    facts = roofline.load_model(shared_dir / "model-configs" / "Llama-3.1-8B.json")
    r = roofline.compute(facts, "H200", 1, batches=(1, 256))
    one, big = r.at(1), r.at(256)
    assert one.t_mem_s == pytest.approx(one.t_ideal_mem_s * 4800 / 4150, rel=1e-9)
    assert big.t_compute_s == pytest.approx(big.t_ideal_compute_s * 989 / 657, rel=1e-9)
    assert r.single_stream_realistic < 0.87 * r.single_stream_ideal
    said = r.assumptions()
    assert said["realistic_bandwidth"].startswith("4,150 GB/s (86% of the 4,800 datasheet): measured 2026-12-04")
    assert said["realistic_tflops"].startswith("bf16 657 TFLOP/s (66% of 989 dense), as measured")


def test_a_chip_without_a_measurement_says_the_realistic_bound_is_the_datasheets(shared_dir):
    facts = roofline.load_model(shared_dir / "model-configs" / "Llama-3.1-8B.json")
    r = roofline.compute(facts, "H100 SXM", 1, batches=(1,))
    assert r.at(1).t_mem_s == pytest.approx(r.at(1).t_ideal_mem_s, rel=1e-9)
    assert "no measurement kept for this chip" in r.assumptions()["realistic_bandwidth"]


def test_a_users_achievable_figures_are_checked(tmp_path, gpudeck_home):
    from console.roofline.catalogue import load_catalogue, user_catalogue_path

    path = user_catalogue_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    entry = ('[[gpu]]\nkey = "h200"\nname = "H200"\naliases = ["h200"]\nmemory_gb = 141\nbandwidth_gbs = 4800\n'
             'tflops = { bf16 = 989 }\ninterconnect = "NVLink 4"\nallreduce_alpha_us = 0.5\nallreduce_beta_gbs = 360\n')
    path.write_text(entry + 'achievable = { bandwidth_gbs = 3900, tflops = { bf16 = 700 } }\n')
    h200 = next(g for g in load_catalogue() if g.key == "h200")
    assert h200.realistic_bandwidth_gbs()[0] == 3900 and h200.realistic_tflops("fp8") == pytest.approx(700)
    path.write_text(entry + 'achievable = { bandwidth_gbs = -1 }\n')
    with pytest.raises(RooflineError, match="'achievable' figures must be positive numbers"):
        load_catalogue()


# -- multimodal: the language model for decode, the other towers named beside --------------------------

def test_a_vision_towers_bytes_are_named_beside_the_language_model():
    """olmOCR-7B (Qwen2-VL): decode reads the language model; the ViT is named, from its own config."""
    facts = roofline.facts_from_config(_corpus("olmOCR-7B-0225-preview"))
    r = roofline.compute(facts, "H200", 1, context=0)
    assert r.setup.totals.stored_bytes_all == pytest.approx(facts.total_params * 2)   # no tower in the step
    # the real index's total_size is the language model and the tower together
    assert (facts.total_params + facts.tower_params["vision_config"]) * 2 == pytest.approx(16582751232, rel=0.002)
    assert r.assumptions()["other_towers"].startswith("vision_config: 0.68B params, about 1.35 GB (estimated")
    # DeepSeek-OCR-2's config names its vision encoder without its shape
    unknown = roofline.compute(roofline.facts_from_config(_corpus("DeepSeek-OCR-2")), "H200", 1)
    assert "size unknown" in unknown.assumptions()["other_towers"]


def test_the_launch_scripts_dtype_is_the_served_dtype(tmp_path, gpudeck_home):
    from profiles import store
    from profiles.profile import profile_from_dict

    write_checkpoint(tmp_path / "model")
    (tmp_path / "model" / "config.json").write_text(json.dumps({**CONFIG, "torch_dtype": "float32"}))
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "serve.sh").write_text(f"#!/bin/sh\nvllm serve {tmp_path / 'model'} --dtype float32\n")
    store.save(profile_from_dict("box", {"transport": "local", "server": {"scripts_dir": str(scripts)},
                                         "model": {"config": str(tmp_path / "model" / "config.json")},
                                         "gpu": {"name": "H100 SXM", "count": 1}}))
    doc = json.loads(gpudeck("roofline", "--profile", "box", "--json").stdout)
    assert "--dtype float32" in doc["assumptions"]["weights_quant"]
    assert any(a.startswith("weights served as --dtype float32 (launch script serve") for a in doc["assumption_notes"])
    (scripts / "serve.sh").write_text(f"#!/bin/sh\nvllm serve {tmp_path / 'model'}\n")
    doc = json.loads(gpudeck("roofline", "--profile", "box", "--json").stdout)
    assert "--dtype auto loads a float32 checkpoint in 16 bits" in doc["assumptions"]["weights_quant"]


def _index_only(folder: Path, extra: dict, total_size: int) -> Path:
    """A model directory with its config and index, and no shards (what a partial download leaves)."""
    write_checkpoint(folder)
    index = json.loads((folder / "model.safetensors.index.json").read_text())
    for shard in folder.glob("*.safetensors"):
        shard.unlink()
    index["metadata"]["total_size"] = total_size
    index["weight_map"] = {n: f for n, f in index["weight_map"].items() if not n.startswith("model.layers.3.")}
    (folder / "model.safetensors.index.json").write_text(json.dumps(index))
    (folder / "config.json").write_text(json.dumps({**CONFIG, **extra}))
    return folder / "config.json"


def test_the_index_alone_settles_weight_keys_when_its_total_agrees(tmp_path):
    sizes = write_checkpoint(tmp_path / "full")
    # the index names no MTP layer here, so its total is the decoder's alone
    total = sum(n for name, n in sizes.items() if not name.startswith("model.layers.3."))
    facts = roofline.load_model(_index_only(tmp_path / "m", {"expert_hidden_multiplier": 3}, total))
    assert any("expert_hidden_multiplier" in a for a in facts.assumptions)
    with pytest.raises(RooflineError, match=r"expert_hidden_multiplier.*total_size .* differs .* by more than 2%"):
        roofline.load_model(_index_only(tmp_path / "n", {"expert_hidden_multiplier": 3}, int(total * 1.5)))
