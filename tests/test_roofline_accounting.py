"""Every config key accounted for: read, known irrelevant, accepted by the operator, or refused by name.

Also the mechanisms that used to give confident wrong numbers: shared experts
under other spellings, per-layer lists, cross-layer KV sharing, recurrent
state dtypes, compressed-tensors `re:` ignore lists and symmetric INT4.
"""
from __future__ import annotations

import ast
import re
import json
from pathlib import Path

import pytest

from console import roofline
from console.roofline.config_keys import judge
from console.roofline.quant import scheme_from_config
from console.roofline.step import kv_per_sequence
from tests.cli import gpudeck

FIXTURES = Path(__file__).parent / "fixtures" / "model-configs"


def _doc(stem: str) -> dict:
    return json.loads((FIXTURES / f"{stem}.json").read_text())


# -- the classifier, by principle ---------------------------------------------------------

@pytest.mark.parametrize("key,value,verdict", [
    # keys of layouts nobody modelled: the words say they are structural
    ("o_lora_rank", 1024, "structural"),
    ("compress_ratios", [4, 4, 128], "structural"),
    ("hc_mult", 4, "structural"),
    ("num_hash_layers", 3, "structural"),
    ("expert_dtype", "fp4", "structural"),
    ("mamba_ssm_cache_dtype", "float32", "structural"),
    ("num_kv_shared_layers", 15, "structural"),
    ("someNewBlockConfig", {"a": 1}, "structural"),      # a nested object
    ("frobnicate_per_layer", [1, 2, 3], "structural"),   # any list
    # keys that change no shape
    ("eos_token_id", [1, 2], "irrelevant"),
    ("attention_dropout", 0.1, "irrelevant"),
    ("rope_scaling", {"factor": 8.0}, "irrelevant"),
    ("_attn_implementation_autoset", True, "irrelevant"),
    ("use_cla", False, "irrelevant"),                    # switched off
    # a coefficient is not a count
    ("attention_out_multiplier", 0.0078125, "other"),
    ("layernorm_full_attention_beta", 1.0, "other"),     # written as a float: never a count
    # a choice of implementation, not a shape; and keys about MTP layers only
    ("norm_type", "hf_rms", "other"),
    ("attention_type", "local", "structural"),
    ("mtp_hybrid_override_pattern", "*E", "irrelevant"),
    ("time_step_limit", [0.0, 1e9], "irrelevant"),
    ("scoring_bonus", 1.5, "other"),
])
def test_structural_looking_keys_are_judged_by_their_words_and_values(key, value, verdict):
    assert judge(key, value) == verdict


def test_an_unread_structural_key_refuses_the_result_naming_it():
    doc = {**_doc("Qwen3-8B"), "o_lora_rank": 1024, "compress_ratios": [4] * 36}
    with pytest.raises(roofline.RooflineError) as err:
        roofline.facts_from_config(doc)
    assert "'compress_ratios'" in str(err.value) and "'o_lora_rank'" in str(err.value)
    assert "--assume-ignored" in str(err.value)


def test_assume_ignored_accepts_the_key_and_lists_it():
    doc = {**_doc("Qwen3-8B"), "o_lora_rank": 1024}
    facts = roofline.facts_from_config(doc, assume_ignored=("o_lora_rank", "not_there"))
    assert facts.total_params == roofline.facts_from_config(_doc("Qwen3-8B")).total_params
    assert any("'o_lora_rank'" in a and "--assume-ignored" in a for a in facts.assumptions)
    assert any("not_there" in w for w in facts.warnings)


def test_a_structural_key_inside_text_config_is_refused_too():
    doc = {"architectures": ["X"], "model_type": "qwen3_vl",
           "text_config": {**_doc("Qwen3-8B"), "num_kv_shared_layers": 12}, "vision_config": {"depth": 27}}
    with pytest.raises(roofline.RooflineError, match="'num_kv_shared_layers'"):
        roofline.facts_from_config(doc)
    doc["text_config"].pop("num_kv_shared_layers")
    facts = roofline.facts_from_config(doc)
    assert any("vision_config" in a for a in facts.assumptions)   # the other tower, left out and said so


@pytest.mark.parametrize("stem", ["Qwen3-8B", "Qwen1.5-MoE-A2.7B", "DeepSeek-V2-Lite", "Nemotron-H-8B-Base-8K",
                                  "Qwen3-Next-80B-A3B", "gemma-3-27b", "Llama-4-Scout-17B-16E"])
def test_a_list_where_a_number_belongs_is_refused_by_name_never_a_crash(stem):
    base = _doc(stem)
    for key, value in base.items():
        if isinstance(value, bool) or not isinstance(value, int) or value < 2:
            continue
        doc = {**base, key: [value, value - 1]}
        try:
            roofline.facts_from_config(doc)
        except roofline.RooflineError as exc:
            assert key in str(exc), (key, str(exc))


def test_a_uniform_per_layer_list_counts_as_its_value():
    doc = _doc("Qwen1.5-MoE-A2.7B")
    layers = doc["num_hidden_layers"]
    listed = {**doc, "num_experts_per_tok": [doc["num_experts_per_tok"]] * layers,
              "moe_intermediate_size": [doc["moe_intermediate_size"]] * layers}
    assert roofline.facts_from_config(listed).active_params == roofline.facts_from_config(doc).active_params


def test_every_defaulted_number_says_so():
    doc = _doc("Qwen2-7B")
    del doc["torch_dtype"], doc["num_key_value_heads"]
    facts = roofline.facts_from_config(doc)
    text = " ".join(facts.warnings)
    assert "'torch_dtype' absent" in text and "'num_key_value_heads' absent" in text


def test_json_has_warnings_assumption_notes_and_the_weight_source(tmp_path):
    doc = {**_doc("gemma-3-27b"), "o_lora_rank": 8}
    path = tmp_path / "config.json"
    path.write_text(json.dumps(doc))
    args = ("roofline", "--model-config", str(path), "--gpu", "H100 SXM", "--count", "1", "--json")
    refused = gpudeck(*args)
    assert refused.returncode != 0 and "'o_lora_rank'" in refused.stderr and "Traceback" not in refused.stderr
    out = gpudeck(*args, "--assume-ignored", "o_lora_rank")
    assert out.returncode == 0, out.stderr
    got = json.loads(out.stdout)
    assert any("sliding_window_pattern" in w for w in got["warnings"])
    assert any("o_lora_rank" in a for a in got["assumption_notes"])
    assert got["weights_from"] == "from config.json only"


# -- the named mechanisms ---------------------------------------------------------------------

@pytest.mark.parametrize("spelling", ["n_shared_experts", "num_shared_experts", "num_shared_expert"])
def test_shared_experts_are_counted_under_every_spelling(spelling):
    doc = _doc("DeepSeek-V2-Lite")
    shared = doc.pop("n_shared_experts")
    with_spelling = roofline.facts_from_config({**doc, spelling: shared})
    none = roofline.facts_from_config(doc)
    per_layer = shared * 3 * doc["hidden_size"] * doc["moe_intermediate_size"]
    assert with_spelling.total_params - none.total_params == per_layer * with_spelling.moe_layers


def test_cross_layer_kv_sharing_is_refused_by_name():
    doc = {**_doc("Qwen2-7B"), "use_cla": True, "cla_share_factor": 2}
    with pytest.raises(roofline.RooflineError, match=r"'use_cla'.*cla_share_factor 2"):
        roofline.facts_from_config(doc)
    off = roofline.facts_from_config({**doc, "use_cla": False})   # switched off: the factor changes nothing
    assert off.total_params == roofline.facts_from_config(_doc("Qwen2-7B")).total_params


def test_attn_type_list_of_only_full_attention_is_full_attention():
    doc = _doc("Qwen2-0.5B")
    layers = doc["num_hidden_layers"]
    facts = roofline.facts_from_config({**doc, "attn_type_list": [1] * layers})
    assert facts.attention.kinds == ("attention",) * layers
    with pytest.raises(roofline.RooflineError, match="lightning"):
        roofline.facts_from_config({**doc, "attn_type_list": [0] + [1] * (layers - 1)})


def test_layers_block_type_beside_the_pattern_must_agree():
    doc = _doc("Nemotron-H-8B-Base-8K")
    names = {"M": "mamba", "*": "attention", "-": "mlp", "E": "moe"}
    listed = [names[c] for c in doc["hybrid_override_pattern"]]
    both = roofline.facts_from_config({**doc, "layers_block_type": listed})
    assert both.total_params == roofline.facts_from_config(doc).total_params
    only_list = {k: v for k, v in doc.items() if k != "hybrid_override_pattern"}
    assert roofline.facts_from_config({**only_list, "layers_block_type": listed}).total_params == both.total_params
    listed[0] = "attention" if listed[0] != "attention" else "mamba"
    with pytest.raises(roofline.RooflineError, match="disagree"):
        roofline.facts_from_config({**doc, "layers_block_type": listed})


def test_nemotron_h_attention_head_dim_is_read():
    facts = roofline.load_model(FIXTURES / "NVIDIA-Nemotron-Nano-9B-v2.json")
    assert facts.attention.head_dim == 128     # not hidden 4480 / 40 heads = 112


def test_recurrent_state_dtype_comes_from_the_config():
    doc = _doc("Nemotron-H-8B-Base-8K")
    gpu = roofline.find_gpu("H100 SXM")

    def state_bytes(d):
        setup = roofline.Setup.build(roofline.facts_from_config(d), gpu, 1, context=0)
        return kv_per_sequence(setup, per_gpu=False)[0]

    bf16, fp32 = state_bytes(doc), state_bytes({**doc, "mamba_ssm_cache_dtype": "float32"})
    assert fp32 == pytest.approx(2 * bf16)
    assert any("recurrent state dtype" in w for w in roofline.facts_from_config(doc).warnings)


# -- quantisation configs ---------------------------------------------------------------------

def _ct(weights: dict, ignore: list[str]) -> dict:
    return {"quant_method": "compressed-tensors", "format": "pack-quantized", "ignore": ignore,
            "config_groups": {"group_0": {"targets": ["Linear"], "weights": weights}}}


@pytest.mark.parametrize("group,symmetric,expected", [(32, True, 0.5625), (32, False, 0.578125), (128, True, 0.515625)])
def test_symmetric_int4_pays_no_zero_point(group, symmetric, expected):
    scheme = scheme_from_config(_ct({"num_bits": 4, "type": "int", "symmetric": symmetric, "group_size": group,
                                     "strategy": "group"}, ["lm_head"]), "q")
    assert scheme.weight_bytes == pytest.approx(expected)


def test_re_prefixed_ignore_patterns_are_regular_expressions_matched_whole():
    scheme = scheme_from_config(_ct({"num_bits": 4, "type": "int", "symmetric": True, "group_size": 128},
                                    ["lm_head", "re:.*self_attn.*", "re:.*mlp\\.gate$", "re:vision.*"]), "q")
    assert scheme.is_excluded("model.layers.3.self_attn.q_proj")
    assert scheme.is_excluded("model.layers.3.mlp.gate")
    assert not scheme.is_excluded("model.layers.3.mlp.gate_proj")    # whole-name match, not a prefix
    assert not scheme.is_excluded("model.layers.3.mlp.down_proj")
    facts = roofline.facts_from_config(_doc("Qwen3-8B"))
    r = roofline.compute(facts, "H100 SXM", 1, quant=scheme)
    assert "q_proj" in r.assumptions()["kept_unquantised"]
    assert any("'re:vision.*'" in w for w in r.warnings())      # a pattern that matches nothing is said


def test_unknown_scheme_fields_are_warned_and_mixed_groups_refused():
    weights = {"num_bits": 4, "type": "int", "symmetric": True, "group_size": 128, "codebook": "x"}
    assert any("'config_groups.group_0.weights.codebook'" in w for w in scheme_from_config(_ct(weights, []), "q").warnings)
    mixed = _ct(weights, [])
    mixed["config_groups"]["group_1"] = {"targets": ["re:.*experts.*"], "weights": {"num_bits": 8, "type": "float"}}
    with pytest.raises(roofline.RooflineError, match="group_0, group_1"):
        scheme_from_config(mixed, "q")
    with pytest.raises(roofline.RooflineError, match="'frobnicate'"):
        scheme_from_config({"quant_method": "frobnicate"}, "q")


# -- the import cycle ---------------------------------------------------------------------------

def test_calibrate_does_not_import_result():
    from tests.test_layering import parse_source

    tree = parse_source(Path(roofline.__file__).parent / "calibrate.py")
    imported = {n.module for n in ast.walk(tree) if isinstance(n, ast.ImportFrom)}
    assert "result" not in imported


# -- layouts from real configs (tests/fixtures/roofline-mechanisms/SOURCES.tsv) -----------------

MECHANISMS = Path(__file__).parent / "fixtures" / "roofline-mechanisms"
SHARED_CONFIGS = Path(__file__).parent / "fixtures" / "shared" / "model-configs"


def test_deepseek_v4_layout_is_refused_naming_each_new_field():
    """Low-rank grouped output projection, compressed/indexed KV, hyper-connections, hash routing."""
    v4 = json.loads((MECHANISMS / "DeepSeek-V4.layout.json").read_text())
    doc = {**json.loads((SHARED_CONFIGS / "DeepSeek-V3.json").read_text()), **v4}
    with pytest.raises(roofline.RooflineError) as err:
        roofline.facts_from_config(doc)
    for key in ("o_lora_rank", "o_groups", "compress_ratios", "hc_mult", "num_hash_layers"):
        assert f"'{key}'" in str(err.value), key
    # the layout fields alone (no hidden_size): the missing field, and the keys that explain it
    with pytest.raises(roofline.RooflineError) as err:
        roofline.facts_from_config(v4)
    assert "missing field 'hidden_size'" in str(err.value) and "'compress_ratios'" in str(err.value)


def test_mimo_v2_flash_per_layer_moe_frequency_is_read_and_its_window_layout_refused():
    doc = json.loads((MECHANISMS / "MiMo-V2-Flash.layout.json").read_text())
    with pytest.raises(roofline.RooflineError) as err:
        roofline.facts_from_config(doc)
    named = re.findall(r"'([a-z_]+)'", str(err.value).split("look structural")[0])
    assert "hybrid_layer_pattern" in named and "swa_num_key_value_heads" in named
    assert "moe_layer_freq" not in named                   # the list is read, never a crash
    facts = roofline.facts_from_config(doc, assume_ignored=tuple(named))
    assert facts.moe_layers == 5 and facts.dense_layers == 1    # moe_layer_freq [0, 1, 1, 1, 1, 1]
    assert all(f"'{k}'" in " ".join(facts.assumptions) for k in named)


def test_qwen35_recurrent_state_is_float32_as_its_config_says():
    facts = roofline.load_model(FIXTURES / "Qwen3.5-18B-REAP-A3B-Coding.json")   # "mamba_ssm_dtype": "float32"
    assert facts.state_dtype_bytes == 4.0 and facts.weight_dtype_bytes == 2
    setup = roofline.Setup.build(facts, roofline.find_gpu("H100 SXM"), 1, context=0)
    assert kv_per_sequence(setup, per_gpu=False)[0] == pytest.approx(facts.attention.state_elems * 4.0)


def test_minimax_m2_layout_is_modelled_and_its_full_attention_list_is_full_attention():
    """rotary_dim, qk_norm_type, use_routing_bias: read or known; an all-1 attn_type_list is full attention."""
    doc = json.loads((MECHANISMS / "MiniMax-M2.toy.json").read_text())
    facts = roofline.facts_from_config({**doc, "attn_type_list": [1, 1]})
    h, inter, e, heads, kv, hd, vocab = 512, 256, 4, 8, 4, 64, 1024
    per_layer = (2 * h                                   # two layernorms
                 + h * heads * hd * 2 + 2 * h * kv * hd  # q, o and k, v
                 + heads * hd + kv * hd                  # full-width q/k norms (qk_norm_type per_layer)
                 + e * 3 * h * inter + e * h + e)        # experts, router and its routing bias
    assert facts.total_params == 2 * per_layer + 2 * vocab * h + h
    assert facts.attention.kinds == ("attention", "attention")


def test_an_unknown_family_is_priced_with_a_warning_that_says_so():
    doc = {**_doc("Qwen2-7B"), "model_type": "brand_new_lm"}
    facts = roofline.facts_from_config(doc)
    assert any("'brand_new_lm' is not a family" in w for w in facts.warnings)
    assert not any("is not a family" in w for w in roofline.facts_from_config(_doc("Qwen2-7B")).warnings)


def test_the_report_lists_the_warnings_and_where_the_weights_come_from():
    from console.report.sections import roofline_section

    r = roofline.compute(roofline.load_model(FIXTURES / "gemma-3-27b.json"), "H100 SXM", 1)
    text = roofline_section(r.to_json(), None, {})
    assert "Warnings:" in text and "'sliding_window_pattern' absent" in text
    assert "weights_from: from config.json only" in text
