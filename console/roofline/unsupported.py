"""Configs the roofline refuses, naming the architecture and the feature it does not model.

A confident wrong number is worse than none: these architectures carry
layers or routing the component model cannot count, so they stop here with
a sentence instead of reaching a "missing field" error or a silent guess.
"""
from __future__ import annotations

from typing import Any

from .errors import RooflineError

_SSM_ONLY = {"mamba", "mamba2", "falcon_mamba", "jamba", "zamba", "zamba2", "bamba", "falcon_h1",
             "granitemoehybrid", "rwkv", "rwkv5", "rwkv6", "rwkv7", "recurrent_gemma", "lfm2", "xlstm"}
# The layer each of those families has in place of (some of) its attention, by name.
_MECHANISMS = {"lfm2": "short-convolution (LIV) layers", "rwkv": "RWKV time-mixing layers",
               "rwkv5": "RWKV time-mixing layers", "rwkv6": "RWKV time-mixing layers", "rwkv7": "RWKV time-mixing layers",
               "recurrent_gemma": "RG-LRU recurrent layers", "xlstm": "xLSTM recurrent layers",
               "falcon_h1": "Mamba-2 layers beside attention", "jamba": "Mamba layers beside attention",
               "zamba": "Mamba layers with a shared attention block", "zamba2": "Mamba-2 layers with shared attention blocks",
               "bamba": "Mamba-2 layers beside attention", "granitemoehybrid": "Mamba-2 layers beside attention"}
_GEMMA4_FEATURES = ("num_global_key_value_heads", "global_head_dim", "attention_k_eq_v", "num_kv_shared_layers",
                    "hidden_size_per_layer_input", "enable_moe_block", "top_k_experts")


def refuse_unsupported(doc: dict[str, Any], where: str, arch: str) -> None:
    """Raise RooflineError when the config uses a feature the roofline does not model."""
    model_type = str(doc.get("model_type") or "")
    if isinstance(doc.get("block_configs"), list):
        raise RooflineError(
            f"{where}: {arch} (model_type {model_type or '?'}) is a NAS model with per-layer 'block_configs' "
            "(attention and feed-forward sizes that change layer by layer, some layers skipped); "
            "the roofline does not model heterogeneous blocks")
    if model_type.startswith("gemma4") or (doc.get("top_k_experts") is not None and doc.get("num_experts_per_tok") is None):
        present = [k for k in _GEMMA4_FEATURES if doc.get(k) not in (None, 0, False)]
        raise RooflineError(
            f"{where}: {arch} (model_type {model_type or '?'}) uses features the roofline does not model: "
            f"{', '.join(repr(k) for k in present) or 'Gemma-4 attention'} "
            "(MoE routing named 'top_k_experts', separate global-attention heads, shared KV layers)")
    if model_type in _SSM_ONLY or (doc.get("hybrid_override_pattern") is None and model_type != "nemotron_h"
                                   and any(doc.get(k) for k in ("ssm_state_size", "mamba_d_state", "mamba_expand"))):
        mechanism = _MECHANISMS.get(model_type, "Mamba/SSM layers")
        raise RooflineError(f"{where}: {arch} (model_type {model_type or '?'}): {mechanism} (recurrent state "
                            "instead of a KV cache) are not modelled outside Nemotron-H's 'hybrid_override_pattern'")
    if doc.get("use_cla") or doc.get("cross_layer_attention"):
        factor = doc.get("cla_share_factor")
        raise RooflineError(f"{where}: {arch}: cross-layer KV sharing ('use_cla'"
                            f"{f', cla_share_factor {factor}' if factor is not None else ''}) is not modelled: "
                            "layers that reuse another layer's KV keep no cache of their own")
    if doc.get("moe_latent_size"):
        raise RooflineError(f"{where}: {arch}: latent MoE ('moe_latent_size') is not modelled")
    if any(k.startswith("linear_num_") for k in doc) and doc.get("layer_types") is None \
            and not doc.get("full_attention_interval"):
        raise RooflineError(f"{where}: {arch}: linear-attention fields without 'layer_types' or "
                            "'full_attention_interval': cannot tell which layers are linear")
