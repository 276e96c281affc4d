"""Every key of a config.json accounted for: read by the model, known to be irrelevant, or refused.

A silent number comes from a key nobody looked at: a per-layer list, a
second expert dtype, a cross-layer KV share. `TrackedConfig` records every
key the component model reads while it builds a model; what is left over is
judged by `judge`: irrelevant to shapes and bytes (token ids, dropout, RoPE
constants), structural-looking (its name speaks of layers, heads, experts,
ranks, windows, ratios or dtypes, or its value is a list or a nested
object), or neither. A structural-looking key the model did not read makes
the result refused, naming the key, unless the operator accepted it with
`--assume-ignored KEY`.
"""
from __future__ import annotations

import re
from typing import Any

from .errors import RooflineError

# Keys that never change a weight shape, the bytes a step reads or the KV cache, with why.
IRRELEVANT = {
    # identity and bookkeeping
    "architectures", "model_type", "transformers_version", "_name_or_path", "auto_map", "torch_dtype_note",
    "is_llama_config", "producer", "transformers.js_config", "_attn_implementation", "_commit_hash",
    "name_or_path", "model_name", "organization", "license", "chat_template", "custom_pipelines",
    # training-only knobs
    "initializer_range", "use_cache", "pretraining_tp", "output_router_logits", "router_aux_loss_coef",
    "aux_loss_alpha", "seq_aux", "tie_encoder_decoder", "gradient_checkpointing", "num_logits_to_keep",
    "router_jitter_noise", "rescale_prenorm_residual", "residual_in_fp32", "use_mamba_kernels",
    "moe_aux_loss_coeff", "moe_z_loss_coeff", "router_z_loss_coef", "enable_moe_fp32_combine",
    "use_return_dict", "return_dict", "torchscript", "is_encoder_decoder", "use_flash_attn",
    # activations and numerics that change neither shapes nor bytes
    "hidden_act", "hidden_activation", "mlp_hidden_act", "mamba_hidden_act", "swiglu_limit",
    "attn_logit_softcapping", "final_logit_softcapping", "query_pre_attn_scalar", "logits_scaling",
    "embedding_multiplier", "residual_multiplier", "attention_multiplier", "scale_emb", "scale_depth",
    # routing arithmetic: which experts, not how many (k and E are read)
    "norm_topk_prob", "scoring_func", "routed_scaling_factor", "topk_group", "n_group", "ep_size",
    "moe_router_activation_func", "router_bias", "moe_norm_topk_prob",
    # context length and position encoding: shapes unchanged
    "max_position_embeddings", "original_max_position_embeddings", "initial_context_length",
    "max_sequence_length", "seq_length", "model_max_length", "cache_implementation",
    "rope_interleave", "rope_interleaved", "indexer_rope_interleave", "use_mrope", "interpolate_factor",
    "partial_rotary_factor", "rotary_pct", "rotary_emb_base", "no_rope_layers", "no_rope_layer_interval",
    # positional-encoding widths: which part of a head is rotated, not how wide the head is
    "rotary_dim", "rotary_emb_dim",
    # training-time routing capacity, token dropping and losses
    "moe_capacity", "mtp_loss_scaling_factor", "moe_router_topk_scaling_factor", "moe_drop_tokens",
    "moe_random_routing_dropped_token", "moe_capacity_factor", "capacity_factor",
    # Mamba's step-size clamps: numbers inside the scan, no shapes
    "time_step_limit", "time_step_min", "time_step_max", "time_step_floor",
    # the vocabulary before padding: the tables are vocab_size wide
    "org_vocab_size",
    # multimodal wrappers: the language model is what decode runs
    "vision_soft_tokens_per_image", "mm_tokens_per_image",
}
# Name fragments of irrelevant keys (whole words of the snake_case name).
_IRRELEVANT_WORDS = {"dropout", "pdrop", "eps", "epsilon", "token", "id", "ids", "rope", "theta",
                     "initializer", "init", "std", "loss", "coef", "aux", "softcapping", "jitter", "version"}
# Words that make a key structural-looking: what decides shapes, counts, routing or bytes.
_STRUCTURAL_WORDS = {
    "layer", "layers", "head", "heads", "expert", "experts", "rank", "window", "windows", "ratio", "ratios",
    "dtype", "dim", "dims", "size", "sizes", "num", "n", "count", "intermediate", "hidden", "group", "groups",
    "shared", "share", "topk", "top", "k", "freq", "frequency", "interval", "step", "pattern", "type", "types",
    "block", "blocks", "kv", "lora", "latent", "proj", "compress", "compressed", "indexer", "hash", "mult",
    "hc", "cla", "state", "conv", "ssm", "mamba", "linear", "chunk", "sparse", "mtp", "nextn", "stride",
    "width", "depth", "channels", "vocab", "embed", "embedding", "moe", "mlp", "ffn", "attn", "attention",
    "routed", "router", "q", "o", "qk", "nope", "global", "local", "swa", "dense", "kernel", "bits",
    "precision", "quant", "expand", "heterogeneous", "bias", "tie", "tied", "per",
}
# A key whose only structural word is one of these names a choice of implementation, not a shape.
_WEAK_WORDS = {"type", "types", "use", "per"}
# Keys about the multi-token-prediction layers only: plain decode never runs them (their count is read).
_MTP_WORDS = {"mtp", "nextn"}
_STRONG_WORDS = {"layer", "layers", "head", "heads", "expert", "experts", "rank", "dim", "dtype", "size",
                 "window", "ratio", "ratios", "intermediate", "kv", "lora"}


# Every field a transformers `GenerationConfig` holds (and the config-level copies of them older
# configs carry): how tokens are chosen, never which weights a step reads.
GENERATION_SETTINGS = frozenset({
    "max_length", "max_new_tokens", "min_length", "min_new_tokens", "early_stopping", "max_time", "stop_strings",
    "do_sample", "num_beams", "num_beam_groups", "penalty_alpha", "dola_layers", "use_cache", "cache_implementation",
    "cache_config", "return_legacy_cache", "prefill_chunk_size", "temperature", "top_k", "top_p", "min_p", "top_h",
    "typical_p", "epsilon_cutoff", "eta_cutoff", "diversity_penalty", "repetition_penalty",
    "encoder_repetition_penalty", "length_penalty", "no_repeat_ngram_size", "bad_words_ids", "force_words_ids",
    "renormalize_logits", "constraints", "forced_bos_token_id", "forced_eos_token_id", "remove_invalid_values",
    "exponential_decay_length_penalty", "suppress_tokens", "begin_suppress_tokens", "forced_decoder_ids",
    "sequence_bias", "token_healing", "guidance_scale", "low_memory", "watermarking_config",
    "num_return_sequences", "output_attentions", "output_hidden_states", "output_scores", "output_logits",
    "return_dict_in_generate", "pad_token_id", "bos_token_id", "eos_token_id", "encoder_no_repeat_ngram_size",
    "decoder_start_token_id", "is_assistant", "num_assistant_tokens", "num_assistant_tokens_schedule",
    "assistant_confidence_threshold", "prompt_lookup_num_tokens", "max_matching_ngram_size",
    "assistant_early_exit", "assistant_lookbehind", "target_lookbehind", "compile_config", "disable_compile",
    "generation_kwargs", "chunk_size_feed_forward", "tf_legacy_loss", "use_bfloat16", "pruned_heads",
    "finetuning_task", "id2label", "label2id", "num_labels", "problem_type", "tokenizer_class", "prefix",
    "task_specific_params", "is_decoder", "add_cross_attention", "cross_attention_hidden_size",
})
# Words of a training framework's knobs: regularisation, losses, initialisation, recomputation.
_TRAINING_WORDS = {"dropout", "pdrop", "loss", "aux", "coef", "coeff", "jitter", "initializer", "init", "std",
                   "gradient", "checkpointing", "recompute", "recomputation", "balance", "balancing", "z"}
# Of those, the words no shape-bearing key ever carries.
_TRAINING_ALWAYS = {"dropout", "pdrop", "loss", "aux", "coef", "coeff", "jitter", "initializer"}
# What a special token marks, in the names of id keys that do not say "token" (bos_id, image_index, ...).
_SPECIAL_TOKENS = {"bos", "eos", "pad", "unk", "sep", "cls", "mask", "image", "video", "audio", "vision", "boi", "eoi",
                   "boa", "eoa", "start", "end", "placeholder", "media", "box", "ref", "coord", "none", "decoder"}
_NORM_WORDS = {"norm", "layernorm", "rmsnorm", "ln"}
# Spellings one architecture gives a field another reads under its usual name (alias -> the usual name).
ALIASES = {"sliding_window_size": "sliding_window", "num_kv_heads": "num_key_value_heads",
           "n_head_kv": "num_key_value_heads", "n_embd": "hidden_size", "n_embed": "hidden_size",
           "n_layer": "num_hidden_layers", "n_layers": "num_hidden_layers", "n_head": "num_attention_heads",
           "n_heads": "num_attention_heads", "ffn_hidden_size": "intermediate_size", "n_inner": "intermediate_size",
           "num_layers": "num_hidden_layers", "d_model": "hidden_size", "attention_window_size": "sliding_window"}


def harmless_kind(key: str, value: Any, doc: dict[str, Any] | None = None) -> str | None:
    """The kind of key that cannot change bytes per token, or None when the key may.

    Decided by what a key is, not by a list of keys seen so far: a generation
    setting (anything a GenerationConfig holds), a tokenizer or special-token
    id, a training-only knob, a flag switching a norm on (norms are tensors:
    priced from the checkpoint or counted as norms), or another spelling of a
    field that was read, with the same value."""
    w = words(key)
    if key in GENERATION_SETTINGS:
        return "a generation setting"
    shapes = w & {"layer", "layers", "head", "heads", "expert", "experts", "dim", "hidden", "intermediate", "vocab",
                  "block", "blocks"}
    if not shapes and ("token" in w or (key.endswith(("_id", "_ids", "_index")) and w & _SPECIAL_TOKENS)):
        return "a tokenizer or special-token id"   # never a per-layer list such as 'swa_layer_ids'
    if w & _TRAINING_ALWAYS or (w & _TRAINING_WORDS and not (w & _STRONG_WORDS)):
        return "a training-only knob"   # a loss's weight stays a loss's weight, per layer or not
    if (key.startswith("use_") or isinstance(value, bool)) and w & _NORM_WORDS:
        return "a flag on norm tensors"
    if {"time", "step"} <= w:
        return "a Mamba step-size setting (one step size per head, inside the scan)"
    usual = ALIASES.get(key)
    if usual and doc is not None and dict.get(doc, usual) == value:   # absent: the alias is read in its place
        return f"another spelling of '{usual}'"
    return None


# Words of what a checkpoint's tensors cannot say: the KV cache's layout (heads, windows, compression,
# which layers keep a cache) and the routing (how many experts a token reads).
_TENSORS_CANNOT_SAY = {"kv", "window", "windows", "swa", "chunk", "chunked", "latent", "compress", "compressed",
                       "compression", "indexer", "index", "sparse", "topk", "top", "k", "tok", "cla", "share",
                       "sharing", "shared", "global", "local", "attention", "attn", "cache", "sink", "sinks",
                       "ratio", "ratios", "stride", "pattern", "types", "type", "per", "active"}


def tensors_cannot_say(key: str) -> bool:
    """True for a key of a kind a checkpoint's tensors cannot settle (KV layout, routing)."""
    return bool(words(key) & _TENSORS_CANNOT_SAY)


def words(key: str) -> set[str]:
    """The words of a key: snake_case and camelCase split, digits dropped."""
    spaced = re.sub(r"([a-z])([A-Z])", r"\1_\2", key)
    return {w for w in re.split(r"[^A-Za-z]+", spaced.lower()) if w}


def _empty(value: Any) -> bool:
    return value is None or value is False or value == 0 or value == "" or value == [] or value == {}


def judge(key: str, value: Any) -> str:
    """"irrelevant", "structural" or "other" for a key the model did not read."""
    if key in IRRELEVANT or key.startswith("_") or _empty(value) or harmless_kind(key, value) is not None:
        return "irrelevant"   # a leading underscore marks a runtime attribute saved by accident
    w = words(key)
    if w & _MTP_WORDS:
        return "irrelevant"
    if not (w & _STRONG_WORDS) and w & _IRRELEVANT_WORDS:
        return "irrelevant"
    if isinstance(value, (list, dict)):
        return "structural"      # a per-layer list or a nested block of settings
    if w & _STRUCTURAL_WORDS - _WEAK_WORDS:
        if isinstance(value, float) and not w & {"ratio", "ratios", "expand", "mult"}:
            return "other"       # written as a float: a coefficient, not a count or a shape
        return "structural"
    return "other"


class TrackedConfig(dict):
    """A config dict that remembers which keys were read and which numbers were defaulted."""

    def __init__(self, doc: dict[str, Any], where: str, arch: str):
        super().__init__(doc)
        self.read: set[str] = set()
        self.warnings: list[str] = []
        self.where = where
        self.arch = arch

    def __getitem__(self, key: str) -> Any:
        self.read.add(key)
        return super().__getitem__(key)

    def get(self, key: str, default: Any = None) -> Any:
        self.read.add(key)
        return super().get(key, default)

    def __contains__(self, key: object) -> bool:
        if isinstance(key, str):
            self.read.add(key)
        return super().__contains__(key)

    def mark(self, *keys: str) -> None:
        """Keys read by a decision that did not go through get (or deliberately set aside)."""
        self.read.update(keys)

    def defaulted(self, key: str, value: Any, why: str) -> Any:
        """The config's value, or `value` with a warning that says the number was not read."""
        got = self.get(key)
        if got is None:
            self.warnings.append(f"'{key}' absent: {value!r} assumed ({why})")
            return value
        return got


def count(doc: dict[str, Any], key: str, default: int = 0, where: str = "config.json") -> int:
    """A whole-number field; a per-layer list whose entries are all equal counts as that value.

    Any other shape is refused naming the key: a list of differing values would
    change the model layer by layer, and no single number can stand for it.
    """
    value = doc.get(key)
    if value is None:
        return default
    if isinstance(value, list):
        if value and all(isinstance(v, (int, float)) and not isinstance(v, bool) for v in value) and len(set(value)) == 1:
            value = value[0]
        else:
            shown = value[:6] + (["..."] if len(value) > 6 else [])
            raise RooflineError(f"{where}: per-layer field '{key}' = {shown} has values that differ layer by layer; "
                                "the roofline does not model it")
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value < 0 or float(value) != int(value):
        raise RooflineError(f"{where}: field '{key}' must be a whole number, got {value!r}")
    return int(value)


def unaccounted(doc: TrackedConfig, assume_ignored: tuple[str, ...] = (), prefix: str = "") -> tuple[list[str], list[str]]:
    """(structural keys nobody read, other keys nobody read); the accepted ones left out."""
    structural, other = [], []
    for key, value in dict.items(doc):
        if key in doc.read or prefix + key in assume_ignored or key in assume_ignored:
            continue
        verdict = "irrelevant" if harmless_kind(key, value, doc) else judge(key, value)
        if verdict == "structural":
            structural.append(prefix + key)
        elif verdict == "other":
            other.append(prefix + key)
    return sorted(structural), sorted(other)


def refuse_unaccounted(keys: list[str], where: str, arch: str) -> None:
    if keys:
        named = ", ".join(repr(k) for k in keys)
        error = RooflineError(
            f"{where}: {arch}: config key(s) {named} look structural (layers, heads, experts, ranks, windows, "
            "ratios, dtypes or per-layer lists) and the roofline does not read them; a number without them "
            f"could be silently wrong. If they change nothing, pass --assume-ignored {keys[0]} (repeatable)")
        error.names_keys = True
        raise error
