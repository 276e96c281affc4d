"""Model facts from a Hugging Face `config.json`: every weight group and the attention shape.

Handles dense GQA models (Llama, Qwen, Mistral), MoE (Mixtral, Qwen-MoE,
gpt-oss) and MLA + MoE with shared experts and leading dense layers
(DeepSeek-V3, Kimi K2, GLM-5 with its sparse-attention indexer), Llama-4's
interleaved MoE with a shared expert, and hybrids whose layers differ
(Gemma sliding windows, Qwen3-Next / Qwen3.5 Gated DeltaNet, Nemotron-H
Mamba-2; see layer_plan). Tied embeddings are counted once, with each
architecture's own default when the config is silent; multi-token-prediction
layers are left out, since plain decode never runs them. What cannot be
modelled is refused by name (unsupported).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from .components import Component
from .config_keys import ALIASES, TrackedConfig, count, tensors_cannot_say, refuse_unaccounted, unaccounted, words
from .errors import RooflineError
from .layer_plan import describe_arch, plan_layers
from .recurrent import gated_deltanet, mamba2
from .serving_dtype import served_dtype
from .towers import tower_params
from .unsupported import refuse_unsupported

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
    kinds: tuple[str, ...] = ()           # per layer: attention, linear, mamba or none (layer_plan.MIXERS)
    state_elems: int = 0                  # fixed recurrent state per sequence, all linear/mamba layers

    def is_attention(self, layer: int) -> bool:
        return not self.kinds or layer >= len(self.kinds) or self.kinds[layer] == "attention"


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
    tied_source: str = "config"            # "config", or the architecture default used when it is silent
    weight_dtype_bytes: int = 2               # as served (serving_dtype), not as stored
    checkpoint_dtype: str = "bfloat16"       # torch_dtype as the config names it
    serving_dtype: str = "bfloat16"          # what the server loads the weights as (serving_dtype.py)
    serving_dtype_source: str = "config"     # why: "config", "--dtype auto (float32 checkpoint)", "--dtype X"
    quantization_config: dict[str, Any] | None = None  # as found in config.json
    source: str | None = None
    checkpoint: dict[str, Any] | None = None  # facts from a safetensors index, if any
    notes: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)     # numbers whose input was defaulted, not read
    assumptions: list[str] = field(default_factory=list)  # keys accepted knowingly, parts left out
    state_dtype_bytes: float | None = None   # recurrent (Mamba / DeltaNet) state dtype, when the config names it
    headers: Any = None                      # shard_headers.CheckpointHeaders of the checkpoint beside the config
    gguf: bool = False                       # read from a GGUF header: the tensors are the only word on dtypes
    tower_params: dict[str, int | None] = field(default_factory=dict)   # other towers (towers.py); None: unknown
    mtp_params: int = 0                      # the MTP layers the checkpoint holds and plain decode leaves out

    def checkpoint_params(self, mtp: bool = True, towers: bool = True) -> int | None:
        """Every parameter the checkpoint holds by the config model: the language model, its MTP layers and
        its other towers (each left out when the index shows the checkpoint has none); None when a tower's
        size is unknown."""
        if towers and any(v is None for v in self.tower_params.values()):
            return None
        return (self.total_params + (self.mtp_params if mtp else 0)
                + (sum(v or 0 for v in self.tower_params.values()) if towers else 0))

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
            "tied_embeddings_source": self.tied_source,
            "layer_mixers": {k: self.attention.kinds.count(k) for k in sorted(set(self.attention.kinds))},
            "source": self.source,
            "checkpoint": self.checkpoint,
            "warnings": list(self.warnings),
            "assumptions": list(self.assumptions),
        }


class _Config:
    """Field access that names the missing field in its error, over a TrackedConfig."""

    def __init__(self, doc: TrackedConfig, where: str, arch: str = ""):
        self.doc = doc
        self.where = where
        self.arch = arch

    def _alias(self, key: str) -> None:
        """An absent field read under another architecture's spelling (config_keys.ALIASES), said in the warnings."""
        if dict.get(self.doc, key) is not None:
            return
        for alias, usual in ALIASES.items():
            if usual == key and dict.get(self.doc, alias) is not None:
                self.doc.mark(alias)
                dict.__setitem__(self.doc, key, dict.get(self.doc, alias))
                self.doc.warnings.append(f"'{key}' read from '{alias}' (another spelling of the same field)")
                return

    def need(self, key: str, why: str) -> Any:
        self._alias(key)
        value = self.doc.get(key)
        if value is None:
            arch = f" ({self.arch})" if self.arch else ""
            raise RooflineError(f"{self.where}{arch}: missing field '{key}' (needed for {why})")
        if isinstance(value, list):
            value = count(self.doc, key, 0, self.where)
        if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
            raise RooflineError(f"{self.where}: field '{key}' must be a positive number, got {value!r}")
        return int(value)

    def get(self, key: str, default: Any = None) -> Any:
        value = self.doc.get(key)
        return default if value is None else value

    def int(self, key: str, default: int = 0) -> int:
        """A whole number; a uniform per-layer list counts as its value, any other list is refused by name."""
        self._alias(key)
        return count(self.doc, key, default, self.where)

    def first(self, keys: tuple[str, ...], default: Any = None) -> Any:
        for key in keys:
            if self.doc.get(key) is not None:
                self.doc.mark(*keys)
                return self.doc[key]
        return default

    def first_int(self, keys: tuple[str, ...], default: int = 0) -> int:
        for key in keys:
            if self.doc.get(key) is not None:
                self.doc.mark(*keys)
                return self.int(key, default)
        return default


def facts_from_gguf(header, name: str, assume_ignored: tuple[str, ...] = ()) -> ModelFacts:
    """ModelFacts from a GGUF header read anywhere (locally or over SSH): its metadata as the config."""
    from .gguf_model import config_from_header, dress

    facts = facts_from_config(config_from_header(header), name=name, where=f"{header.source} (GGUF metadata)",
                              assume_ignored=assume_ignored, witnessed=True)
    return dress(facts, header)


def load_model(path: str | Path, name: str | None = None, assume_ignored: tuple[str, ...] = (),
               witnessed: bool = False, serve_dtype: str | None = None) -> ModelFacts:
    """Read a config.json (and a safetensors index beside it, if any).

    `witnessed`: the caller holds the checkpoint's headers (`--checkpoint`, the launch script's model
    path), so keys of weight shapes are settled by its tensors (facts_from_config). `serve_dtype`: the
    launch's `--dtype` (None: auto), which decides the bytes a step reads (serving_dtype.py)."""
    path = Path(path)
    from .gguf_header import is_gguf

    if is_gguf(path):   # llama.cpp's single file: its header is the config and the witness at once
        from .gguf_header import read_local as read_gguf

        return facts_from_gguf(read_gguf(path), name or path.name.removesuffix(".gguf"), tuple(assume_ignored))
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
    from .shard_headers import INDEX, checkpoint_summary, read_index, read_local

    # the shard headers, read once and first: the witness of a config.json in its model directory (its
    # tensors settle every weight shape), and the checkpoint's sizes beside any config that has one
    headers = problem = None
    if path.name == "config.json" or (path.parent / INDEX).is_file() or (path.parent / "model.safetensors").is_file():
        try:
            headers = read_local(path.parent)
        except (RooflineError, OSError) as exc:
            problem = str(exc)
    witnessed = witnessed or (path.name == "config.json" and headers is not None and bool(headers.tensors))
    index_total = None
    index_names: list[str] = []
    if path.name == "config.json" and not witnessed:
        try:
            index = read_index(path.parent)
        except RooflineError:
            index = None
        meta = index.get("metadata") if isinstance(index, dict) else None
        index_total = meta.get("total_size") if isinstance(meta, dict) else None
        witnessed = isinstance(index_total, int) and index_total > 0
        index_names = list(index["weight_map"]) if witnessed and isinstance(index, dict) else []
    try:
        facts = facts_from_config(doc, name=name or _name_from_path(path), where=str(path),
                                  assume_ignored=tuple(assume_ignored), witnessed=witnessed, serve_dtype=serve_dtype)
    except RooflineError:
        raise
    except (TypeError, ValueError, OverflowError) as exc:  # a field of the wrong kind (a list where a count belongs)
        raise RooflineError(f"{path}: a field has a value of the wrong kind ({exc})") from None
    facts.source = str(path)
    if index_total:
        _check_index_total(facts, index_total, path, index_names)
    facts.checkpoint = checkpoint_summary(path.parent, facts.num_layers, headers, problem)
    if path.name == "config.json":
        facts.headers = headers
        if problem:
            facts.warnings.append(f"checkpoint beside the config not used: {problem}")
    return facts


def _check_index_total(facts: ModelFacts, total: int, path: Path, names: list[str]) -> None:
    """With only the index (no shards), its total_size settles the weight-shape keys not read only
    when the config model's bytes agree with it within 2%; otherwise those keys refuse, by name. The
    index's names say which families it holds: MTP layers and other towers count only when it has them."""
    from .checkpoint import place

    settled = [a for a in facts.assumptions if "settled by the checkpoint's tensors" in a]
    classes = {place(n, facts.num_layers)[0] for n in names}
    params = facts.checkpoint_params(mtp="mtp" in classes, towers="other_towers" in classes)
    priced = (params or 0) * _DTYPE_BYTES.get(facts.checkpoint_dtype, 2)
    if settled and (params is None or abs(priced - total) / total > 0.02):
        error = RooflineError(f"{path}: {settled[0].removesuffix(': weight shapes, settled by the checkpoint' + chr(39) + 's tensors')}"
                              f" and the index's total_size {total / 1e9:.3g} GB differs from the config model's "
                              f"{priced / 1e9:.3g} GB by more than 2%: the shards' headers are needed to settle them")
        error.names_keys = True
        raise error


def _name_from_path(path: Path) -> str:
    if path.name == "config.json":
        return path.parent.name or "model"
    return path.stem.removesuffix(".config")  # "GLM-5-NVFP4.config.json" names GLM-5-NVFP4


# Architectures whose config class ties the output head to the input table when the config is silent.
_TIED_BY_DEFAULT = ("gemma", "gemma2", "gemma3", "gemma3_text", "gemma3n", "gemma3n_text", "paligemma", "smollm3")
# Architectures whose config class has its own head_dim default (not hidden / heads).
_HEAD_DIM_DEFAULT = {"qwen3_next": 256, "qwen3_5": 256, "qwen3_5_text": 256, "qwen3_5_moe": 256,
                     "qwen3_5_moe_text": 256, "gemma": 256, "gemma2": 256, "gemma3_text": 256}
# Families whose module layout the component model was written for and checked against a reference count.
_KNOWN_FAMILIES = {
    "llama", "mistral", "mixtral", "qwen2", "qwen2_moe", "qwen3", "qwen3_moe", "qwen3_next", "qwen3_5", "qwen3_5_text",
    "qwen3_5_moe", "qwen3_5_moe_text", "qwen3_vl_text", "gemma", "gemma2", "gemma3", "gemma3_text", "deepseek_v2",
    "deepseek_v3", "kimi_k2", "glm", "glm4_moe", "glm_moe_dsa", "gpt_oss", "llama4", "llama4_text", "nemotron_h",
    "olmo2", "olmoe", "phi3", "smollm3", "mimo", "minimax_m2",
}
# Feed-forward blocks with two matrices (up, down) instead of gate/up/down.
_TWO_MATRIX_FFN = ("nemotron_h", "falcon")


# Keys of a multimodal wrapper that belong to other towers: decode runs the language model only.
_OTHER_TOWERS = ("vision_config", "audio_config", "speech_config", "vision_tower", "mm_projector_type",
                 "projector_hidden_act", "multimodal_projector_bias", "image_size", "patch_size",
                 "vision_feature_layer", "vision_feature_select_strategy", "spatial_merge_size")
# Words of a multimodal wrapper's keys that belong to another modality's tower or its placeholders.
_OTHER_MODALITIES = {"vision", "visual", "video", "image", "media", "audio", "speech", "mm", "patch", "view", "tile",
                     "resolutions", "projector", "vit", "sam"}
# Recurrent-state dtype fields (the state a Mamba / DeltaNet layer keeps per sequence).
_STATE_DTYPE_KEYS = ("mamba_ssm_cache_dtype", "mamba_ssm_dtype", "ssm_cache_dtype", "ssm_state_dtype", "linear_state_dtype",
                     "recurrent_state_dtype")
_SHARED_EXPERT_KEYS = ("n_shared_experts", "num_shared_experts", "num_shared_expert", "moe_num_shared_experts",
                       "shared_experts")
_EXPERT_COUNT_KEYS = ("n_routed_experts", "num_local_experts", "num_experts", "moe_num_experts")
_TOP_K_KEYS = ("num_experts_per_tok", "experts_per_token", "moe_topk", "moe_k", "num_experts_per_token")


def facts_from_config(doc: dict[str, Any], name: str = "model", where: str = "config.json",
                      assume_ignored: tuple[str, ...] = (), witnessed: bool = False,
                      serve_dtype: str | None = None) -> ModelFacts:
    """Build the component list of one model from its parsed config.

    Every key is accounted for: the ones the model reads, the ones known to
    be irrelevant, and any other structural-looking key refuses the result by
    name unless it is in `assume_ignored`. `witnessed`: a checkpoint is there whose tensors settle every
    weight shape, so such a key blocks only if it is of a kind the tensors cannot say (the KV layout,
    the experts a token reads: config_keys.tensors_cannot_say). When the build stops on its own
    error first (a missing field, a layout it cannot read), the refusal also
    names the structural keys nobody had read: they are usually the reason.
    """
    seen: list[TrackedConfig] = []
    try:
        return _facts_from_config(doc, name, where, tuple(assume_ignored), seen, witnessed, serve_dtype)
    except RooflineError as exc:
        if seen and not getattr(exc, "names_keys", False):
            structural, _ = unaccounted(seen[-1], tuple(assume_ignored))
            if structural:
                raise RooflineError(f"{exc}; config key(s) not modelled: "
                                    f"{', '.join(repr(k) for k in structural)}") from None
        raise


def _facts_from_config(doc: dict[str, Any], name: str, where: str, assume_ignored: tuple[str, ...],
                       seen: list[TrackedConfig], witnessed: bool = False,
                       serve_dtype: str | None = None) -> ModelFacts:
    arch = describe_arch(doc)
    outer: TrackedConfig | None = None
    warnings: list[str] = []
    assumptions: list[str] = []
    whole = doc
    if "hidden_size" not in doc and isinstance(doc.get("language_config"), dict) and "text_config" not in doc:
        doc = {**doc, "text_config": doc["language_config"]}   # DeepSeek-VL's spelling of the language model's config
        doc.pop("language_config")
    if "hidden_size" not in doc and isinstance(doc.get("text_config"), dict):
        outer = TrackedConfig(doc, where, arch)
        outer.mark("text_config", "quantization_config", "tie_word_embeddings", "torch_dtype", "dtype", "architectures")
        towers = [k for k in doc if k in _OTHER_TOWERS or words(k) & _OTHER_MODALITIES]
        outer.mark(*towers)
        if any(isinstance(doc.get(k), dict) for k in towers):
            assumptions.append(f"{', '.join(k for k in towers if isinstance(doc.get(k), dict))}: the other towers of this "
                               "multimodal model are not counted (decode runs the language model only)")
        inner = dict(doc["text_config"])
        for key in ("quantization_config", "tie_word_embeddings", "torch_dtype", "dtype"):
            if inner.get(key) is None and doc.get(key) is not None:
                inner[key] = doc[key]
        inner.setdefault("architectures", doc.get("architectures"))
        doc, where = inner, f"{where} text_config"
    refuse_unsupported(doc, where, arch)
    tracked = TrackedConfig(doc, where, arch)
    seen.append(tracked)
    # a multimodal model whose language fields sit at the top: its tower keys belong to the other towers,
    # and a nested copy of the language model's fields (DeepSeek-VL's language_config) repeats them
    tracked.mark(*[k for k in doc if k in _OTHER_TOWERS or words(k) & _OTHER_MODALITIES])
    if outer is None and isinstance(doc.get("language_config"), dict):
        tracked.mark("language_config")
    if dict.get(doc, "lm_head") is True:   # DeepSeek-VL's flag that the output head exists: it is priced anyway
        tracked.mark("lm_head")
    if not doc.get("use_cla"):
        tracked.mark("use_cla", "cla_share_factor")   # sharing switched off: the factor changes nothing
    cfg = _Config(tracked, where, arch)
    hidden = cfg.need("hidden_size", "every weight shape")
    layers = cfg.need("num_hidden_layers", "the layer count")
    heads = cfg.need("num_attention_heads", "the attention shape")
    vocab = cfg.need("vocab_size", "the embedding and output head")
    model_type = str(cfg.get("model_type", "unknown"))
    if model_type not in _KNOWN_FAMILIES:
        warnings.append(f"model_type {model_type!r} is not a family the component model was checked against: "
                        "priced as a standard decoder (attention and gated MLP per layer) from the keys it reads")
    if doc.get("tie_word_embeddings") is None:
        tied = model_type in _TIED_BY_DEFAULT
        tied_source = f"{model_type} default ({'tied' if tied else 'untied'}; config is silent)"
        warnings.append(f"'tie_word_embeddings' absent: {tied_source}")
    else:
        tied, tied_source = bool(tracked["tie_word_embeddings"]), "config"
    dtype_name = cfg.first(("torch_dtype", "dtype"), None)
    if dtype_name is None:
        warnings.append("'torch_dtype' absent: 2 bytes per weight assumed (bfloat16)")
        dtype_name = "bfloat16"
    dtype_name = str(dtype_name)
    if dtype_name not in _DTYPE_BYTES:
        raise RooflineError(f"{where}: weight dtype {dtype_name!r} ('torch_dtype') is not modelled "
                            f"(known: {', '.join(sorted(_DTYPE_BYTES))})")
    serving, serving_source = served_dtype(dtype_name, serve_dtype)
    if serving != dtype_name:
        assumptions.append(f"weights stored as {dtype_name}, priced as {serving} ({serving_source})")
    comps: list[Component] = [Component("model.embed_tokens", "embedding", vocab * hidden, linear=False)]

    num_experts = cfg.first_int(_EXPERT_COUNT_KEYS, 0)
    top_k = cfg.first_int(_TOP_K_KEYS, 0)
    if num_experts and not top_k:
        raise RooflineError(f"{where} ({arch}): missing field 'num_experts_per_tok' (needed for the experts each token reads)")
    mla = cfg.get("kv_lora_rank") is not None
    tracked.mark("quantization_config")   # read by the quantisation scheme (quant.py)
    moe_flags = [_is_moe_layer(cfg, i, num_experts, model_type, layers) for i in range(layers)]
    plan = plan_layers(tracked, layers, moe_flags, where, arch)
    attention = _attention_shape(cfg, hidden, heads, layers, mla)
    state_elems = 0
    for i, layer in enumerate(plan):
        prefix = f"model.layers.{i}"
        norms = 1 if model_type in _TWO_MATRIX_FFN else 2
        comps.append(Component(f"{prefix}.layernorms", "small", norms * hidden, linear=False, replicated_in_tp=True, layer=i))
        if layer.mixer == "attention":
            comps.extend(_mla_layer(cfg, prefix, i, hidden, heads) if mla else _gqa_layer(cfg, prefix, i, hidden, attention, model_type))
        elif layer.mixer in ("linear", "mamba"):
            mixer = gated_deltanet if layer.mixer == "linear" else mamba2
            parts, state = mixer(tracked, prefix, i, hidden, where, arch)
            comps.extend(parts)
            state_elems += state
        if layer.ffn == "moe":
            if not num_experts:
                raise RooflineError(f"{where} ({arch}): layer {i} is MoE but the config names no expert count")
            comps.extend(_moe_block(cfg, prefix, i, hidden, num_experts, model_type))
        elif layer.ffn == "dense":
            inter = cfg.int("intermediate_size_mlp", 0) if model_type.startswith("llama4") else 0
            if model_type == "falcon" and cfg.first_int(("intermediate_size", "ffn_hidden_size"), 0) == 0:
                inter = int(cfg.doc.defaulted("ffn_hidden_size", 4 * hidden, "Falcon's feed-forward is 4 x hidden"))
            inter = inter or cfg.need("intermediate_size", "the dense feed-forward layers")
            names = ("up_proj", "down_proj") if model_type in _TWO_MATRIX_FFN else ("gate_proj", "up_proj", "down_proj")
            for proj in names:   # one component per matrix, so quant ignore patterns naming one of them match
                comps.append(Component(f"{prefix}.mlp.{proj}", "mlp", hidden * inter, layer=i))
            if cfg.get("mlp_bias") or (model_type == "falcon" and cfg.get("bias")):
                comps.append(Component(f"{prefix}.mlp.bias", "small", 2 * inter + hidden, linear=False, layer=i))
    comps.append(Component("model.norm", "small", hidden, linear=False, replicated_in_tp=True))
    comps.append(Component("lm_head", "head", vocab * hidden))
    if not any(p.ffn == "dense" for p in plan):
        tracked.mark("intermediate_size", "intermediate_size_mlp")  # sizes of dense layers this model has none of
    attention = replace(attention, windows=tuple(p.window for p in plan), kinds=tuple(p.mixer for p in plan),
                         state_elems=state_elems)
    state_bytes = _state_dtype(cfg, state_elems, where) if state_elems else None
    if state_elems and state_bytes is None:
        warnings.append("recurrent state dtype not named in the config (e.g. 'mamba_ssm_cache_dtype'): "
                        "the weight dtype is assumed for the state")

    moe_layers = sum(1 for p in plan if p.ffn == "moe")
    mtp = cfg.first_int(("num_nextn_predict_layers", "mtp_num_hidden_layers", "num_mtp_modules",
                         "mtp_transformer_layers"), 0)
    tracked.mark("use_mtp")   # whether MTP layers exist: they are left out either way
    if model_type == "falcon":   # layouts of the same tensors: parallel blocks, ALiBi, the 40B/180B layout flag
        tracked.mark("parallel_attn", "alibi", "new_decoder_architecture", "multi_query", "bias", "num_ln_in_parallel_attn")
    # the accounting: every key read, known irrelevant, accepted, or refused by name
    structural, other = unaccounted(tracked, assume_ignored)
    if outer is not None:
        s_out, o_out = unaccounted(outer, assume_ignored)
        structural += s_out
        other += o_out
    if witnessed:
        settled = [k for k in structural if not tensors_cannot_say(k)]
        structural = [k for k in structural if tensors_cannot_say(k)]
        if settled:
            assumptions.append(f"config key(s) {', '.join(settled)} not read: weight shapes, settled by the "
                               "checkpoint's tensors")
    refuse_unaccounted(structural, where, arch)
    present = set(doc) | (set(outer) if outer is not None else set())
    for key in assume_ignored:
        if key in present:
            assumptions.append(f"config key '{key}' taken as irrelevant to shapes and bytes (--assume-ignored)")
        else:
            warnings.append(f"--assume-ignored {key}: the config has no such key")
    if other:
        assumptions.append(f"config keys not read, judged not structural: {', '.join(other)}")
    if mtp:
        assumptions.append(f"{mtp} multi-token-prediction layer(s) not counted: plain decode does not run them "
                           "(a checkpoint's total includes them)")
    towers = tower_params(whole, hidden)
    facts = ModelFacts(
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
        mtp_layers_excluded=mtp,
        tied_embeddings=tied,
        tied_source=tied_source,
        weight_dtype_bytes=_DTYPE_BYTES[serving],
        checkpoint_dtype=dtype_name,
        serving_dtype=serving,
        serving_dtype_source=serving_source,
        quantization_config=doc.get("quantization_config") if isinstance(doc.get("quantization_config"), dict) else None,
        warnings=list(dict.fromkeys(warnings + tracked.warnings)),
        assumptions=assumptions,
        state_dtype_bytes=state_bytes,
        tower_params=towers,
    )
    if mtp:   # the MTP layers as the checkpoint holds them: one decoder layer each, with its input projection
        last = [c for c in comps if c.layer == layers - 1]
        facts.mtp_params = mtp * (sum(c.total_params for c in last) + 2 * hidden * hidden + 3 * hidden)
    return facts


def _state_dtype(cfg: _Config, state_elems: int, where: str) -> float | None:
    for key in _STATE_DTYPE_KEYS:
        value = cfg.get(key)
        if value is None:
            continue
        cfg.doc.mark(*_STATE_DTYPE_KEYS)
        if str(value) not in _DTYPE_BYTES:
            raise RooflineError(f"{where}: recurrent state dtype {value!r} ('{key}') is not modelled")
        return float(_DTYPE_BYTES[str(value)])
    return None


def _is_moe_layer(cfg: _Config, i: int, num_experts: int, model_type: str, layers: int) -> bool:
    if not num_experts:
        return False
    if model_type.startswith("llama4"):
        listed = cfg.get("moe_layers")
        if isinstance(listed, list):
            return i in listed
        step = cfg.int("interleave_moe_layer_step", 1) or 1
        return (i + 1) % step == 0
    freq = cfg.get("moe_layer_freq")
    if isinstance(freq, list):      # one flag per layer (1 = MoE), as MiMo-V2 writes it
        if len(freq) != layers or any(v not in (0, 1, True, False) for v in freq):
            raise RooflineError(f"{cfg.where}: per-layer 'moe_layer_freq' must list 0 or 1 for each of {layers} layers")
        return bool(freq[i])
    if any(cfg.get(k) is not None for k in ("moe_layer_start_index", "moe_layer_end_index", "moe_layer_interval")):
        start = cfg.int("moe_layer_start_index", 0)      # ERNIE-4.5: MoE from start to end, every interval
        end = cfg.get("moe_layer_end_index")
        end = layers - 1 if end is None or end == -1 else cfg.int("moe_layer_end_index", layers - 1)
        every = cfg.int("moe_layer_interval", 1) or 1
        return start <= i <= end and (i - start) % every == 0
    only = cfg.get("mlp_only_layers") or []
    if not isinstance(only, list):
        raise RooflineError(f"{cfg.where}: 'mlp_only_layers' must be a list of layer numbers")
    if i in only:
        return False
    if i < cfg.int("first_k_dense_replace", 0):
        return False
    every = cfg.int("moe_layer_freq", 1) or 1
    if i % every:
        return False
    step = cfg.int("decoder_sparse_step", 1) or 1
    return (i + 1) % step == 0


def _attention_shape(cfg: _Config, hidden: int, heads: int, layers: int, mla: bool) -> Attention:
    if mla:
        cfg.doc.mark("num_key_value_heads", "head_dim")  # MLA keeps one latent: no KV heads of a head size
        rope = cfg.need("qk_rope_head_dim", "the MLA rope key")
        nope = cfg.int("qk_nope_head_dim", 0)
        return Attention(
            kind="mla",
            num_heads=heads,
            num_kv_heads=1,
            head_dim=nope + rope,
            v_head_dim=cfg.need("v_head_dim", "the MLA value heads"),
            kv_lora_rank=cfg.need("kv_lora_rank", "the MLA latent cache"),
            rope_dim=rope,
            index_heads=cfg.int("index_n_heads", 0),
            index_head_dim=cfg.int("index_head_dim", 0),
            index_topk=cfg.int("index_topk", 0),
        )
    head_dim = cfg.first_int(("head_dim", "attention_head_dim"), 0)
    if not head_dim:
        default = _HEAD_DIM_DEFAULT.get(str(cfg.get("model_type", "")))
        head_dim = default or hidden // heads
        why = f"the {cfg.get('model_type')} default" if default else "hidden_size / num_attention_heads"
        if default:
            cfg.doc.warnings.append(f"'head_dim' absent: {head_dim} assumed ({why})")
    cfg._alias("num_key_value_heads")
    if cfg.get("model_type") == "falcon" and cfg.get("num_key_value_heads") is None:
        # Falcon: one shared KV head under 'multi_query' (7B), else one per query head (its config class)
        multi = bool(cfg.get("multi_query")) and not cfg.get("new_decoder_architecture")
        dict.__setitem__(cfg.doc, "num_key_value_heads", 1 if multi else heads)
        cfg.doc.warnings.append(f"'num_kv_heads' absent: {1 if multi else heads} assumed (Falcon's default"
                                f"{' with multi_query' if multi else ''})")
    if cfg.get("num_key_value_heads") is None:
        kv_heads = heads
        cfg.doc.warnings.append(f"'num_key_value_heads' absent: {heads} assumed (one KV head per query head)")
    else:
        kv_heads = cfg.int("num_key_value_heads", heads) or heads
    return Attention("gqa", heads, kv_heads, head_dim, head_dim)


_QK_NORM_KEYS = ("use_qk_norm", "qk_norm", "qk_layernorm", "use_qk_layernorm")
_GATED_QUERY = ("qwen3_next", "qwen3_5", "qwen3_5_text", "qwen3_5_moe", "qwen3_5_moe_text")


def _gqa_layer(cfg: _Config, prefix: str, i: int, hidden: int, att: Attention, model_type: str) -> list[Component]:
    q = att.num_heads * att.head_dim
    kv = att.num_kv_heads * att.head_dim
    p = f"{prefix}.self_attn"
    gate = cfg.get("attn_output_gate")
    gated = 2 if (model_type in _GATED_QUERY if gate is None else gate) else 1   # the query projection also yields an output gate
    out = [
        Component(f"{p}.q_proj", "attention", hidden * q * gated, layer=i),
        Component(f"{p}.k_proj", "attention", hidden * kv, layer=i),
        Component(f"{p}.v_proj", "attention", hidden * kv, layer=i),
        Component(f"{p}.o_proj", "attention", q * hidden, layer=i),
    ]
    bias = 0
    if cfg.get("attention_bias"):
        bias = q + 2 * kv + hidden
    elif model_type.startswith("qwen2") or cfg.first(("use_qkv_bias", "qkv_bias")):
        bias = q + 2 * kv
    if bias:
        out.append(Component(f"{p}.bias", "small", bias, linear=False, layer=i))
    if model_type.startswith("qwen3"):
        out.append(Component(f"{p}.qk_norm", "small", 2 * att.head_dim, linear=False, replicated_in_tp=True, layer=i))
    elif cfg.first(_QK_NORM_KEYS) and not model_type.startswith("llama4"):   # Llama-4's qk norm has no weights
        per_head = str(cfg.get("qk_norm_type", "per_head")) == "per_head"
        size = 2 * att.head_dim if per_head else q + kv
        out.append(Component(f"{p}.qk_norm", "small", size, linear=False, replicated_in_tp=True, layer=i))
    if model_type == "gpt_oss":
        out.append(Component(f"{p}.sinks", "small", att.num_heads, linear=False, layer=i))
    return out


def _mla_layer(cfg: _Config, prefix: str, i: int, hidden: int, heads: int) -> list[Component]:
    p = f"{prefix}.self_attn"
    rope = cfg.need("qk_rope_head_dim", "the MLA rope key")
    nope = cfg.need("qk_nope_head_dim", "the MLA query heads")
    v_dim = cfg.need("v_head_dim", "the MLA value heads")
    kv_rank = cfg.need("kv_lora_rank", "the MLA latent cache")
    q_rank = cfg.int("q_lora_rank", 0)
    qk = nope + rope
    if cfg.int("qk_head_dim", qk) != qk:
        raise RooflineError(f"{cfg.where}: 'qk_head_dim' {cfg.get('qk_head_dim')} is not qk_nope_head_dim + "
                            f"qk_rope_head_dim ({qk}); the MLA layout is not the one modelled")
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
    n_idx = cfg.int("index_n_heads", 0)
    if n_idx:
        d_idx = cfg.need("index_head_dim", "the sparse-attention indexer")
        q_in = q_rank or hidden
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
    inter = cfg.int("moe_intermediate_size", 0) or cfg.need("intermediate_size", "the expert size")
    matrices = 2 if model_type in _TWO_MATRIX_FFN else 3
    per_expert = matrices * hidden * inter
    out = [Component(f"{base}.experts", "experts", per_expert, count=num_experts, layer=i)]
    if model_type == "gpt_oss":  # experts carry biases: gate_up (2I) and down (H)
        out.append(Component(f"{base}.experts.bias", "experts", 2 * inter + hidden, count=num_experts, linear=False, layer=i))
    gate_params = num_experts * hidden
    if (model_type in ("gpt_oss", "nemotron_h") or cfg.get("topk_method") == "noaux_tc"
            or cfg.first(("use_routing_bias", "moe_use_aux_free", "moe_router_enable_expert_bias"))):
        gate_params += num_experts  # router bias / score-correction bias
    out.append(Component(f"{base}.{gate_name}", "router", gate_params, linear=False, replicated_in_tp=True, layer=i))
    shared = cfg.first_int(_SHARED_EXPERT_KEYS, 0)
    shared_size = cfg.int("moe_shared_expert_intermediate_size", 0)
    if model_type.startswith("hunyuan"):
        # Hunyuan: the always-on MLP beside the experts is intermediate_size wide per shared expert
        shared = shared if cfg.get("use_mixed_mlp_moe") else 0
        shared_size = cfg.need("intermediate_size", "Hunyuan's shared MLP") if shared else 0
    elif shared_size and not shared:
        shared = int(cfg.doc.defaulted("n_shared_experts", 1, "a shared expert size is given"))
    if model_type.startswith("llama4"):  # one always-on expert of the routed experts' size
        out.append(Component(f"{base}.shared_expert", "shared", per_expert, layer=i))
    elif shared and shared_size:
        out.append(Component(f"{base}.shared_experts", "shared", shared * matrices * hidden * shared_size, layer=i))
    elif shared:
        out.append(Component(f"{base}.shared_experts", "shared", shared * per_expert, layer=i))
    shared_inter = cfg.int("shared_expert_intermediate_size", 0)
    if shared_inter:
        out.append(Component(f"{base}.shared_expert", "shared", 3 * hidden * shared_inter, layer=i))
        out.append(Component(f"{base}.shared_expert_gate", "router", hidden, linear=False, replicated_in_tp=True, layer=i))
    return out
