"""A model's facts from its GGUF header: llama.cpp's metadata as a config, its tensors as the witness.

llama.cpp names every dimension under its architecture (`llama.block_count`,
`llama.attention.head_count_kv`, ...) and every tensor by its own scheme
(`blk.3.attn_q.weight`, `blk.3.ffn_up_exps.weight`). Both are translated to
the names the rest of the roofline reads, so a GGUF is priced by the same
component model and, above all, by its own tensors' bytes in their ggml
types (Q4_1 blocks with their scales, not 4 bits).
"""
from __future__ import annotations

import re
from typing import Any

from .errors import RooflineError
from .gguf_header import GGUFHeader
from .shard_headers import CheckpointHeaders, Tensor

# GGUF metadata (after the architecture prefix) -> config.json field.
_FIELDS = {
    "block_count": "num_hidden_layers", "embedding_length": "hidden_size", "feed_forward_length": "intermediate_size",
    "attention.head_count": "num_attention_heads", "attention.head_count_kv": "num_key_value_heads",
    "attention.key_length": "head_dim", "vocab_size": "vocab_size", "expert_count": "num_experts",
    "expert_used_count": "num_experts_per_tok", "expert_feed_forward_length": "moe_intermediate_size",
    "expert_shared_count": "n_shared_experts", "expert_shared_feed_forward_length": "shared_expert_intermediate_size",
    "leading_dense_block_count": "first_k_dense_replace", "attention.sliding_window": "sliding_window",
    "attention.kv_lora_rank": "kv_lora_rank", "attention.q_lora_rank": "q_lora_rank",
    "rope.dimension_count": "rotary_dim", "context_length": "max_position_embeddings",
}
# llama.cpp architectures as config.json model types.
_MODEL_TYPE = {"llama": "llama", "qwen2": "qwen2", "qwen3": "qwen3", "qwen3moe": "qwen3_moe", "qwen2moe": "qwen2_moe",
               "mistral3": "mistral", "gemma2": "gemma2", "gemma3": "gemma3_text", "phi3": "phi3", "olmo2": "olmo2",
               "smollm3": "smollm3", "gpt-oss": "gpt_oss", "deepseek2": "deepseek_v3", "glm4moe": "glm4_moe"}
# Architectures whose GGUF layout is not a plain decoder: refused by name rather than mispriced.
_REFUSED = {"mamba": "Mamba/SSM layers", "mamba2": "Mamba/SSM layers", "rwkv6": "RWKV recurrent layers",
            "rwkv7": "RWKV recurrent layers", "jamba": "Mamba/SSM layers", "falcon-h1": "Mamba/SSM layers",
            "nemotron_h": "Mamba/SSM layers", "lfm2": "short convolution layers", "qwen3next": "Gated DeltaNet layers",
            "t5": "an encoder-decoder", "bert": "an encoder", "nomic-bert": "an encoder"}

# llama.cpp tensor names -> the checkpoint names checkpoint.place() reads.
_RENAMES = [
    (re.compile(r"^token_embd\."), "model.embed_tokens."),
    (re.compile(r"^output_norm\."), "model.norm."),
    (re.compile(r"^output\."), "lm_head."),
    (re.compile(r"^blk\.(\d+)\.nextn\."), r"model.layers.\1.mtp."),
    (re.compile(r"^blk\.(\d+)\.ffn_(gate|up|down)_shexp\."), r"model.layers.\1.mlp.shared_experts.\2_proj."),
    (re.compile(r"^blk\.(\d+)\.ffn_gate_up_exps\."), r"model.layers.\1.mlp.experts.gate_up_proj."),
    (re.compile(r"^blk\.(\d+)\.ffn_(gate|up|down)_exps\."), r"model.layers.\1.mlp.experts.\2_proj."),
    (re.compile(r"^blk\.(\d+)\.ffn_(gate|up|down)_exps_b\."), r"model.layers.\1.mlp.experts.\2_proj_bias."),
    (re.compile(r"^blk\.(\d+)\.exp_probs_b\."), r"model.layers.\1.mlp.gate.e_score_correction_bias."),
    (re.compile(r"^blk\.(\d+)\.ffn_gate_inp_shexp\."), r"model.layers.\1.mlp.shared_expert_gate."),
    (re.compile(r"^blk\.(\d+)\.ffn_gate_inp\."), r"model.layers.\1.mlp.gate."),
    (re.compile(r"^blk\.(\d+)\.ffn_(gate|up|down)\."), r"model.layers.\1.mlp.\2_proj."),
    (re.compile(r"^blk\.(\d+)\.(attn_norm|ffn_norm|post_attention_norm|post_ffw_norm|attn_q_norm|attn_k_norm|"
                r"attn_kv_a_norm|attn_q_a_norm|layer_output_norm)\."), r"model.layers.\1.\2_layernorm."),
    (re.compile(r"^blk\.(\d+)\.attn_(q|k|v|qkv|output|q_a|q_b|kv_a_mqa|kv_b|k_b|v_b|sinks)\."),
     r"model.layers.\1.self_attn.\2_proj."),
]


def tensor_name(name: str) -> str:
    """A llama.cpp tensor name as the checkpoint classes read it (unknown names pass unchanged)."""
    for pattern, repl in _RENAMES:
        if pattern.search(name):
            return pattern.sub(repl, name, count=1)
    return name


def config_from_header(h: GGUFHeader) -> dict[str, Any]:
    """The config.json fields the header gives, with the tie read from the tensors (no output.weight: tied)."""
    arch = h.architecture
    if not arch:
        raise RooflineError(f"{h.source}: GGUF header names no 'general.architecture'")
    if arch in _REFUSED:
        raise RooflineError(f"{h.source}: GGUF architecture {arch!r} has {_REFUSED[arch]}, which the roofline "
                            "does not model")
    doc: dict[str, Any] = {"model_type": _MODEL_TYPE.get(arch, arch), "architectures": [f"gguf:{arch}"],
                           # llama.cpp keeps its KV cache in f16 unless --cache-type-k/-v says otherwise
                           "torch_dtype": "float16"}
    for key, field in _FIELDS.items():
        value = h.arch_value(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool):
            doc[field] = int(value)
    if "vocab_size" not in doc:
        tokens = h.metadata.get("tokenizer.ggml.tokens")
        if isinstance(tokens, int):
            doc["vocab_size"] = tokens
        else:
            embd = next((t for t in h.tensors if t.name == "token_embd.weight"), None)
            if embd is not None and len(embd.shape) == 2:
                doc["vocab_size"] = embd.shape[0]
    names = {t.name for t in h.tensors}
    doc["tie_word_embeddings"] = "output.weight" not in names
    if any(n.startswith("blk.0.attn_q_norm") for n in names):
        doc["qk_norm"] = True
    if arch == "deepseek2" and "kv_lora_rank" in doc:
        key_len = h.arch_value("attention.key_length")
        rope = h.arch_value("rope.dimension_count")
        if isinstance(key_len, int) and isinstance(rope, int):
            doc.update(qk_rope_head_dim=rope, qk_nope_head_dim=key_len - rope)
        value_len = h.arch_value("attention.value_length")
        if isinstance(value_len, int):
            doc["v_head_dim"] = value_len
        doc.pop("head_dim", None)
    return doc


def headers_from_gguf(h: GGUFHeader) -> CheckpointHeaders:
    """The GGUF's tensors as checkpoint headers, under the names the checkpoint classes read."""
    out = CheckpointHeaders(source=h.source, shards=1, gguf=h)
    out.tensors = [Tensor(tensor_name(t.name), t.dtype, t.nbytes, t.shape) for t in h.tensors]
    return out


def dress(facts, header: GGUFHeader):
    """ModelFacts read from a GGUF's metadata, told where they came from: its tensors are the witness
    and the weights are priced in the file's own types (model_facts.facts_from_gguf calls this)."""
    facts.source = header.source
    facts.gguf = True
    facts.tied_source = "GGUF: no output.weight tensor" if facts.tied_embeddings else "GGUF: its own output.weight"
    facts.headers = headers_from_gguf(header)
    facts.warnings = [w for w in facts.warnings if "torch_dtype" not in w]
    facts.serving_dtype_source = "llama.cpp: weights in the GGUF's own types, KV cache f16"
    types = sorted({t.dtype for t in header.tensors}, key=lambda d: -sum(t.nbytes for t in header.tensors if t.dtype == d))
    facts.assumptions.append(f"GGUF {header.architecture} (version {header.version}): weights priced from its "
                             f"{len(header.tensors)} tensors as stored ({', '.join(types)}), not from a config.json")
    facts.checkpoint = {"gguf": header.source, "total_bytes": header.tensor_bytes, "tensors": len(header.tensors)}
    return facts
