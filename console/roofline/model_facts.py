"""Model facts from a Hugging Face `config.json`: every weight group and the attention shape.

Handles dense GQA models (Llama, Qwen, Mistral), MoE (Mixtral, Qwen-MoE,
gpt-oss) and MLA + MoE with shared experts and leading dense layers
(DeepSeek-V3, Kimi K2, GLM-5 with its sparse-attention indexer). Tied
embeddings are counted once; multi-token-prediction layers are left out,
since plain decode never runs them.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from .components import Component
from .errors import RooflineError

_DTYPE_BYTES = {"bfloat16": 2, "float16": 2, "float32": 4, "bf16": 2, "fp16": 2}


@dataclass(frozen=True)
class Attention:
    """What decode attention reads and computes per token of context."""

    kind: str                 # "gqa" or "mla"
    num_heads: int
    num_kv_heads: int         # GQA only; MLA keeps one shared latent
    head_dim: int             # GQA head size, or MLA q/k head size (nope + rope)
    v_head_dim: int
    kv_lora_rank: int = 0     # MLA latent width
    rope_dim: int = 0         # MLA decoupled rope key width
    index_heads: int = 0      # sparse-attention indexer (0 = none)
    index_head_dim: int = 0
    index_topk: int = 0       # tokens the sparse attention keeps per query
    windows: tuple[int | None, ...] = ()  # per layer: sliding window or None for full


@dataclass
class ModelFacts:
    name: str
    model_type: str
    hidden_size: int
    num_layers: int
    vocab_size: int
    components: list[Component]
    attention: Attention
    num_experts: int = 0
    experts_per_token: int = 0
    moe_layers: int = 0
    dense_layers: int = 0
    mtp_layers_excluded: int = 0
    tied_embeddings: bool = False
    weight_dtype_bytes: int = 2
    quantization_config: dict[str, Any] | None = None  # as found in config.json
    source: str | None = None
    checkpoint: dict[str, Any] | None = None  # facts from a safetensors index, if any
    notes: list[str] = field(default_factory=list)

    # -- parameter counts -------------------------------------------------
    def _sum(self, roles_out: tuple[str, ...] = (), experts_active: bool = False) -> int:
        total = 0
        for c in self.components:
            if c.role in roles_out:
                continue
            if c.role == "head" and self.tied_embeddings and not experts_active:
                continue  # the same tensor as the embedding table: stored once
            n = c.params * (min(self.experts_per_token, c.count) if (experts_active and c.role == "experts") else c.count)
            total += n
        return total

    @property
    def total_params(self) -> int:
        """Every stored parameter once (MTP layers excluded)."""
        return self._sum()

    @property
    def active_params(self) -> int:
        """What one decode step reads for one token: no input table, output head counted."""
        return self._sum(roles_out=("embedding",), experts_active=True)

    @property
    def active_params_with_embedding(self) -> int:
        """The active count as Qwen and Mistral publish it: the input table included."""
        extra = 0 if self.tied_embeddings else self.embedding_params
        return self.active_params + extra

    @property
    def active_params_without_embeddings(self) -> int:
        """Neither the input table nor the output head (GLM's published convention)."""
        return self._sum(roles_out=("embedding", "head"), experts_active=True)

    @property
    def embedding_params(self) -> int:
        return sum(c.total_params for c in self.components if c.role == "embedding")

    def summary(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "model_type": self.model_type,
            "total_params": self.total_params,
            "active_params": self.active_params,
            "active_params_with_embedding": self.active_params_with_embedding,
            "active_params_without_embeddings": self.active_params_without_embeddings,
            "layers": self.num_layers,
            "dense_layers": self.dense_layers,
            "moe_layers": self.moe_layers,
            "experts": self.num_experts or None,
            "experts_per_token": self.experts_per_token or None,
            "attention": self.attention.kind,
            "sparse_attention_topk": self.attention.index_topk or None,
            "mtp_layers_excluded": self.mtp_layers_excluded,
            "tied_embeddings": self.tied_embeddings,
            "source": self.source,
            "checkpoint": self.checkpoint,
        }


class _Config:
    """Field access that names the missing field in its error."""

    def __init__(self, doc: dict[str, Any], where: str):
        self.doc = doc
        self.where = where

    def need(self, key: str, why: str) -> Any:
        value = self.doc.get(key)
        if value is None:
            raise RooflineError(f"{self.where}: missing field '{key}' (needed for {why})")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise RooflineError(f"{self.where}: field '{key}' must be a positive number, got {value!r}")
        return int(value)

    def get(self, key: str, default: Any = None) -> Any:
        value = self.doc.get(key)
        return default if value is None else value

    def first(self, keys: tuple[str, ...], default: Any = None) -> Any:
        for key in keys:
            if self.doc.get(key) is not None:
                return self.doc[key]
        return default


def load_model(path: str | Path, name: str | None = None) -> ModelFacts:
    """Read a config.json (and a safetensors index beside it, if any)."""
    path = Path(path)
    try:
        doc = json.loads(path.read_text())
    except FileNotFoundError:
        raise RooflineError(f"model config not found: {path}") from None
    except (OSError, UnicodeDecodeError) as exc:
        raise RooflineError(f"cannot read model config {path}: {exc}") from None
    except json.JSONDecodeError as exc:
        raise RooflineError(f"{path}: not valid JSON (line {exc.lineno}: {exc.msg})") from None
    if not isinstance(doc, dict):
        raise RooflineError(f"{path}: expected a JSON object")
    try:
        facts = facts_from_config(doc, name=name or _name_from_path(path), where=str(path))
    except (TypeError, ValueError, OverflowError) as exc:  # a field of the wrong kind (a list where a count belongs)
        raise RooflineError(f"{path}: a field has a value of the wrong kind ({exc})") from None
    facts.source = str(path)
    from .safetensors_index import checkpoint_facts

    facts.checkpoint = checkpoint_facts(path.parent, facts.num_layers)
    return facts


def _name_from_path(path: Path) -> str:
    if path.name == "config.json":
        return path.parent.name or "model"
    return path.stem


def facts_from_config(doc: dict[str, Any], name: str = "model", where: str = "config.json") -> ModelFacts:
    """Build the component list of one model from its parsed config."""
    if "hidden_size" not in doc and isinstance(doc.get("text_config"), dict):
        inner = dict(doc["text_config"])
        inner.setdefault("quantization_config", doc.get("quantization_config"))
        doc, where = inner, f"{where} text_config"
    cfg = _Config(doc, where)
    hidden = cfg.need("hidden_size", "every weight shape")
    layers = cfg.need("num_hidden_layers", "the layer count")
    heads = cfg.need("num_attention_heads", "the attention shape")
    vocab = cfg.need("vocab_size", "the embedding and output head")
    model_type = str(cfg.get("model_type", "unknown"))
    tied = bool(cfg.get("tie_word_embeddings", False))
    dtype_name = str(cfg.first(("torch_dtype", "dtype"), "bfloat16"))
    comps: list[Component] = [Component("model.embed_tokens", "embedding", vocab * hidden, linear=False)]

    num_experts = int(cfg.first(("n_routed_experts", "num_local_experts", "num_experts"), 0) or 0)
    top_k = int(cfg.first(("num_experts_per_tok", "experts_per_token", "moe_topk"), 0) or 0)
    if num_experts and not top_k:
        raise RooflineError(f"{where}: missing field 'num_experts_per_tok' (needed for the experts each token reads)")
    mla = cfg.get("kv_lora_rank") is not None
    attention = _attention_shape(cfg, hidden, heads, layers, mla)
    moe_flags = [_is_moe_layer(cfg, i, num_experts, model_type) for i in range(layers)]

    for i in range(layers):
        prefix = f"model.layers.{i}"
        comps.append(Component(f"{prefix}.layernorms", "small", 2 * hidden, linear=False, replicated_in_tp=True, layer=i))
        comps.extend(_mla_layer(cfg, prefix, i, hidden, heads) if mla else _gqa_layer(cfg, prefix, i, hidden, attention, model_type))
        if moe_flags[i]:
            comps.extend(_moe_block(cfg, prefix, i, hidden, num_experts, model_type))
        else:
            inter = cfg.need("intermediate_size", "the dense feed-forward layers")
            comps.append(Component(f"{prefix}.mlp", "mlp", 3 * hidden * inter, layer=i))
            if cfg.get("mlp_bias"):
                comps.append(Component(f"{prefix}.mlp.bias", "small", 2 * inter + hidden, linear=False, layer=i))
    comps.append(Component("model.norm", "small", hidden, linear=False, replicated_in_tp=True))
    comps.append(Component("lm_head", "head", vocab * hidden))

    moe_layers = sum(moe_flags)
    return ModelFacts(
        name=name,
        model_type=model_type,
        hidden_size=hidden,
        num_layers=layers,
        vocab_size=vocab,
        components=comps,
        attention=attention,
        num_experts=num_experts if moe_layers else 0,
        experts_per_token=top_k if moe_layers else 0,
        moe_layers=moe_layers,
        dense_layers=layers - moe_layers,
        mtp_layers_excluded=int(cfg.get("num_nextn_predict_layers", 0) or 0),
        tied_embeddings=tied,
        weight_dtype_bytes=_DTYPE_BYTES.get(dtype_name, 2),
        quantization_config=doc.get("quantization_config") if isinstance(doc.get("quantization_config"), dict) else None,
    )


def _is_moe_layer(cfg: _Config, i: int, num_experts: int, model_type: str) -> bool:
    if not num_experts:
        return False
    if i in (cfg.get("mlp_only_layers") or []):
        return False
    if i < int(cfg.get("first_k_dense_replace", 0) or 0):
        return False
    freq = int(cfg.get("moe_layer_freq", 1) or 1)
    if i % freq:
        return False
    step = int(cfg.get("decoder_sparse_step", 1) or 1)
    return (i + 1) % step == 0


def _attention_shape(cfg: _Config, hidden: int, heads: int, layers: int, mla: bool) -> Attention:
    windows = _windows(cfg, layers)
    if mla:
        rope = cfg.need("qk_rope_head_dim", "the MLA rope key")
        nope = int(cfg.get("qk_nope_head_dim", 0))
        return Attention(
            kind="mla",
            num_heads=heads,
            num_kv_heads=1,
            head_dim=nope + rope,
            v_head_dim=cfg.need("v_head_dim", "the MLA value heads"),
            kv_lora_rank=cfg.need("kv_lora_rank", "the MLA latent cache"),
            rope_dim=rope,
            index_heads=int(cfg.get("index_n_heads", 0) or 0),
            index_head_dim=int(cfg.get("index_head_dim", 0) or 0),
            index_topk=int(cfg.get("index_topk", 0) or 0),
            windows=windows,
        )
    head_dim = int(cfg.get("head_dim", 0) or 0) or hidden // heads
    kv_heads = int(cfg.get("num_key_value_heads", heads) or heads)
    return Attention("gqa", heads, kv_heads, head_dim, head_dim, windows=windows)


def _windows(cfg: _Config, layers: int) -> tuple[int | None, ...]:
    window = cfg.get("sliding_window")
    types = cfg.get("layer_types")
    if isinstance(types, list) and window:
        return tuple(int(window) if t == "sliding_attention" else None for t in types[:layers])
    if window and cfg.get("use_sliding_window", True) and cfg.get("model_type") in ("mistral",):
        return tuple(int(window) for _ in range(layers))
    return tuple(None for _ in range(layers))


def _gqa_layer(cfg: _Config, prefix: str, i: int, hidden: int, att: Attention, model_type: str) -> list[Component]:
    q = att.num_heads * att.head_dim
    kv = att.num_kv_heads * att.head_dim
    p = f"{prefix}.self_attn"
    out = [
        Component(f"{p}.q_proj", "attention", hidden * q, layer=i),
        Component(f"{p}.k_proj", "attention", hidden * kv, layer=i),
        Component(f"{p}.v_proj", "attention", hidden * kv, layer=i),
        Component(f"{p}.o_proj", "attention", q * hidden, layer=i),
    ]
    bias = 0
    if cfg.get("attention_bias"):
        bias = q + 2 * kv + hidden
    elif model_type.startswith("qwen2"):
        bias = q + 2 * kv
    if bias:
        out.append(Component(f"{p}.bias", "small", bias, linear=False, layer=i))
    if model_type.startswith("qwen3"):
        out.append(Component(f"{p}.qk_norm", "small", 2 * att.head_dim, linear=False, replicated_in_tp=True, layer=i))
    if model_type == "gpt_oss":
        out.append(Component(f"{p}.sinks", "small", att.num_heads, linear=False, layer=i))
    return out


def _mla_layer(cfg: _Config, prefix: str, i: int, hidden: int, heads: int) -> list[Component]:
    p = f"{prefix}.self_attn"
    rope = cfg.need("qk_rope_head_dim", "the MLA rope key")
    nope = cfg.need("qk_nope_head_dim", "the MLA query heads")
    v_dim = cfg.need("v_head_dim", "the MLA value heads")
    kv_rank = cfg.need("kv_lora_rank", "the MLA latent cache")
    q_rank = cfg.get("q_lora_rank")
    qk = nope + rope
    out: list[Component] = []
    if q_rank:
        out.append(Component(f"{p}.q_a_proj", "attention", hidden * q_rank, layer=i, replicated_in_tp=True))
        out.append(Component(f"{p}.q_a_layernorm", "small", q_rank, linear=False, replicated_in_tp=True, layer=i))
        out.append(Component(f"{p}.q_b_proj", "attention", q_rank * heads * qk, layer=i))
    else:
        out.append(Component(f"{p}.q_proj", "attention", hidden * heads * qk, layer=i))
    out += [
        Component(f"{p}.kv_a_proj_with_mqa", "attention", hidden * (kv_rank + rope), layer=i, replicated_in_tp=True),
        Component(f"{p}.kv_a_layernorm", "small", kv_rank, linear=False, replicated_in_tp=True, layer=i),
        Component(f"{p}.kv_b_proj", "attention", kv_rank * heads * (nope + v_dim), layer=i),
        Component(f"{p}.o_proj", "attention", heads * v_dim * hidden, layer=i),
    ]
    n_idx = int(cfg.get("index_n_heads", 0) or 0)
    if n_idx:
        d_idx = cfg.need("index_head_dim", "the sparse-attention indexer")
        q_in = int(q_rank or hidden)
        ip = f"{p}.indexer"
        out += [
            Component(f"{ip}.wq_b", "indexer", q_in * n_idx * d_idx, layer=i, replicated_in_tp=True),
            Component(f"{ip}.wk", "indexer", hidden * d_idx, layer=i, replicated_in_tp=True),
            Component(f"{ip}.weights_proj", "indexer", hidden * n_idx, layer=i, replicated_in_tp=True),
            Component(f"{ip}.k_norm", "small", 2 * d_idx, linear=False, replicated_in_tp=True, layer=i),
        ]
    return out


def _moe_block(cfg: _Config, prefix: str, i: int, hidden: int, num_experts: int, model_type: str) -> list[Component]:
    if model_type == "mixtral":
        base, gate_name = f"{prefix}.block_sparse_moe", "gate"
    elif model_type == "gpt_oss":
        base, gate_name = f"{prefix}.mlp", "router"
    else:
        base, gate_name = f"{prefix}.mlp", "gate"
    inter = cfg.first(("moe_intermediate_size",), None)
    if inter is None:
        inter = cfg.need("intermediate_size", "the expert size")
    inter = int(inter)
    per_expert = 3 * hidden * inter
    out = [Component(f"{base}.experts", "experts", per_expert, count=num_experts, layer=i)]
    if model_type == "gpt_oss":  # experts carry biases: gate_up (2I) and down (H)
        out.append(Component(f"{base}.experts.bias", "experts", 2 * inter + hidden, count=num_experts, linear=False, layer=i))
    gate_params = num_experts * hidden
    if model_type == "gpt_oss" or cfg.get("topk_method") == "noaux_tc":
        gate_params += num_experts  # router bias / score-correction bias
    out.append(Component(f"{base}.{gate_name}", "router", gate_params, linear=False, replicated_in_tp=True, layer=i))
    shared = int(cfg.get("n_shared_experts", 0) or 0)
    if shared:
        out.append(Component(f"{base}.shared_experts", "shared", shared * per_expert, layer=i))
    shared_inter = cfg.get("shared_expert_intermediate_size")
    if shared_inter:
        out.append(Component(f"{base}.shared_expert", "shared", 3 * hidden * int(shared_inter), layer=i))
        out.append(Component(f"{base}.shared_expert_gate", "router", hidden, linear=False, replicated_in_tp=True, layer=i))
    return out
