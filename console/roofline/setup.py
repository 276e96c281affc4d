"""Everything one roofline is computed from, checked and folded into per-step totals.

`Setup.build` turns a model, a GPU and a parallel layout into a handful of
sums (bytes read every step, bytes per routed expert, FLOPs per token, KV
bytes per token of context) so that each batch size costs almost nothing:
the what-if pane recomputes on every keystroke.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from .catalogue import GPUSpec
from .checkpoint import ROLE_CLASS, Witness, compare, config_width, witness_from_headers
from .components import Component
from .errors import RooflineError
from .model_facts import ModelFacts
from .quant import QuantScheme, kv_bytes, kv_dtype_name, scheme_from_config
from .shard_headers import CheckpointHeaders

# Knobs the operator may edit; anything else in `assumptions` is a stated fact.
DEFAULT_KNOBS: dict[str, Any] = {
    "allreduce_alpha_us": None,      # from the GPU catalogue when None
    "allreduce_beta_gbs": None,      # from the GPU catalogue when None
    "allreduces_per_layer": 2,       # after attention and after the MLP (Megatron-style TP)
    "mem_efficiency": 1.0,           # fraction of peak bandwidth the realistic bound assumes
    "compute_efficiency": 1.0,       # fraction of peak TFLOPS the realistic bound assumes
    "step_overhead_us": 0.0,         # fixed cost per decode step in the realistic bound
    "activation_bytes": 2,           # BF16 hidden states on the wire
    "embedding_table_read": False,   # False: a step reads B rows of the input table; True: the whole table
                                     # every step, as hand calculations often do (counts a tied table twice)
}


@dataclass
class Totals:
    """Per-step sums: `_all` for the whole model once, `_gpu` for the busiest GPU of a TP group."""

    fixed_bytes_all: float = 0.0          # weights read every step whatever the batch
    fixed_bytes_gpu: float = 0.0
    embedding_bytes: float = 0.0
    embedding_row_bytes: float = 0.0      # one token's row of the input table (read per sequence per step)
    expert_layers: list[float] = field(default_factory=list)   # bytes of one expert, per MoE layer
    flops_per_token: dict[str, float] = field(default_factory=dict)        # by compute dtype, whole model
    flops_per_token_gpu: dict[str, float] = field(default_factory=dict)    # by compute dtype, one GPU
    stored_bytes_all: float = 0.0         # every weight once
    stored_bytes_gpu: float = 0.0
    bf16_kept_bytes: float = 0.0          # linear weights a quant config left in their dtype
    bf16_kept_paths: set[str] = field(default_factory=set)
    class_bytes: dict[str, float] = field(default_factory=dict)   # stored bytes by checkpoint class (checkpoint.CLASSES)
    class_width: dict[str, str] = field(default_factory=dict)     # the storage width the config model gives each class


@dataclass
class Setup:
    facts: ModelFacts
    gpu: GPUSpec
    count: int
    tp: int
    ep: int
    scheme: QuantScheme | None
    kv_dtype: str
    context: int
    knobs: dict[str, Any]
    totals: Totals
    warnings: list[str] = field(default_factory=list)   # from the quant config: unknown fields, dead patterns
    witness: Witness | None = None    # the checkpoint's headers, when readable: they win over the config model

    @property
    def dp(self) -> int:
        return self.count // self.tp

    @property
    def alpha_s(self) -> float:
        return float(self.knobs["allreduce_alpha_us"]) * 1e-6

    @property
    def beta_bps(self) -> float:
        return float(self.knobs["allreduce_beta_gbs"]) * 1e9

    @property
    def kv_bytes(self) -> float:
        return kv_bytes(self.kv_dtype)

    @property
    def state_bytes(self) -> float:
        """Bytes per element of a linear-attention / Mamba state: its own dtype field, else the weight dtype."""
        if self.facts.state_dtype_bytes:
            return float(self.facts.state_dtype_bytes)
        return float(self.facts.weight_dtype_bytes)

    @classmethod
    def build(cls, facts: ModelFacts, gpu: GPUSpec, count: int, tp: int | None = None, ep: int | None = None,
              quant: QuantScheme | str | None = None, kv_dtype: str | None = None, context: int = 4096,
              assumptions: dict[str, Any] | None = None, checkpoint: CheckpointHeaders | None = None) -> "Setup":
        count, tp, ep, context = _check_layout(count, tp, ep, context)
        scheme = _scheme(facts, quant)
        kv = kv_dtype_name(kv_dtype) if kv_dtype else (scheme.kv_dtype if scheme and scheme.kv_dtype
                                                       else model_kv_dtype(facts))
        knobs = dict(DEFAULT_KNOBS)
        for key, value in (assumptions or {}).items():
            if key not in knobs:
                raise RooflineError(f"unknown assumption {key!r}: editable ones are {', '.join(knobs)}")
            knobs[key] = value
        if knobs["allreduce_alpha_us"] is None:
            knobs["allreduce_alpha_us"] = gpu.allreduce_alpha_us
        if knobs["allreduce_beta_gbs"] is None:
            knobs["allreduce_beta_gbs"] = gpu.allreduce_beta_gbs
        for key in ("allreduce_beta_gbs", "mem_efficiency", "compute_efficiency", "activation_bytes", "allreduces_per_layer"):
            if not isinstance(knobs[key], (int, float)) or isinstance(knobs[key], bool) or knobs[key] <= 0:
                raise RooflineError(f"assumption {key!r} must be a positive number, got {knobs[key]!r}")
        for key in ("allreduce_alpha_us", "step_overhead_us"):
            if not isinstance(knobs[key], (int, float)) or isinstance(knobs[key], bool) or knobs[key] < 0:
                raise RooflineError(f"assumption {key!r} must be a number >= 0, got {knobs[key]!r}")
        totals = _fold(facts, gpu, tp, scheme, bool(knobs["embedding_table_read"]))
        headers = checkpoint if checkpoint is not None else facts.headers
        witness = None
        if headers is not None and headers.tensors:
            witness = witness_from_headers(headers, facts.num_layers,
                                           facts.checkpoint_dtype == "float32" and facts.weight_dtype_bytes == 2)
            # a GGUF's metadata names no dtype: its tensors' ggml types are the only word, nothing to disagree with
            witness.disagreements = [] if facts.gguf else compare(witness, totals.stored_bytes_all, totals.class_width,
                                                                  totals.class_bytes)
            _use_checkpoint(totals, witness, facts, bool(knobs["embedding_table_read"]))
        return cls(facts, gpu, count, tp, ep, scheme, kv, context, knobs, totals, _quant_warnings(facts, scheme),
                   witness)


def model_kv_dtype(facts: ModelFacts) -> str:
    """The KV cache's dtype when nothing names one: the dtype the weights are served in (fp16 stays fp16)."""
    return "fp16" if facts.serving_dtype == "float16" else "bf16"


def _quant_warnings(facts: ModelFacts, scheme: QuantScheme | None) -> list[str]:
    if scheme is None:
        return []
    out = list(scheme.warnings)
    dead = scheme.unmatched_patterns([c.path for c in facts.components])
    if dead:
        shown = ", ".join(repr(p) for p in dead[:5]) + (f" and {len(dead) - 5} more" if len(dead) > 5 else "")
        out.append(f"{scheme.source}: {len(dead)} of {len(scheme.excluded)} exclusion pattern(s) match no module of "
                   f"the language model as priced here: {shown}")
    return out


def _check_layout(count: Any, tp: Any, ep: Any, context: Any) -> tuple[int, int, int, int]:
    def whole(name: str, value: Any, minimum: int) -> int:
        if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
            raise RooflineError(f"{name} must be a whole number >= {minimum}, got {value!r}")
        return value

    count = whole("count", count, 1)
    tp = whole("tp", count if tp is None else tp, 1)
    ep = whole("ep", 1 if ep is None else ep, 1)
    context = whole("context", context, 0)
    if count % tp:
        raise RooflineError(f"tp {tp} does not divide the GPU count {count}")
    if tp % ep:
        raise RooflineError(f"ep {ep} does not divide tp {tp} (experts are spread inside one TP group)")
    return count, tp, ep, context


def _scheme(facts: ModelFacts, quant: QuantScheme | str | None) -> QuantScheme | None:
    from .quant import scheme_from_name

    if isinstance(quant, QuantScheme):
        return quant
    if isinstance(quant, str) and quant:
        return scheme_from_name(quant)
    if facts.quantization_config:
        where = f"{facts.source or facts.name} quantization_config"
        try:
            return scheme_from_config(facts.quantization_config, where)
        except (TypeError, ValueError, OverflowError) as exc:  # a value of the wrong kind (a list for a size)
            raise RooflineError(f"{where}: a value of the wrong kind ({exc})") from None
    return None


def gpu_share(comp: Component, facts: ModelFacts, tp: int) -> float:
    """The fraction of a component the busiest GPU of a TP group holds and reads."""
    if tp == 1 or comp.replicated_in_tp or comp.role == "small":
        return 1.0
    att = facts.attention
    if att.kind == "gqa" and comp.path.endswith((".k_proj", ".v_proj")) and att.num_kv_heads < tp:
        return 1.0 / att.num_kv_heads  # fewer KV heads than ranks: each rank keeps a whole head
    return 1.0 / tp


def _fold(facts: ModelFacts, gpu: GPUSpec, tp: int, scheme: QuantScheme | None, embedding_read: bool) -> Totals:
    t = Totals()
    base = float(facts.weight_dtype_bytes)
    expert_bytes_by_layer: dict[int, float] = {}
    widest: dict[str, float] = {}
    k = facts.experts_per_token
    for comp in facts.components:
        per_param = scheme.bytes_per_param(comp, base) if scheme else base
        share = gpu_share(comp, facts, tp)
        if comp.role == "head" and facts.tied_embeddings:
            stored = 0.0
        else:
            stored = comp.total_params * per_param
        t.stored_bytes_all += stored
        cls_name = ROLE_CLASS[comp.role]
        t.class_bytes[cls_name] = t.class_bytes.get(cls_name, 0.0) + stored
        if comp.linear and comp.role != "small" and stored >= widest.get(cls_name, 0.0):
            widest[cls_name] = stored
            t.class_width[cls_name] = config_width(per_param)
        t.stored_bytes_gpu += stored * (share if comp.role != "experts" else 1.0 / tp)
        if scheme and comp.linear and comp.role not in ("router", "embedding") and per_param == base and scheme.weight_bytes != base:
            t.bf16_kept_bytes += comp.total_params * base
            t.bf16_kept_paths.add(comp.path.split(".")[-1])
        if comp.role == "embedding":
            t.embedding_bytes = comp.params * per_param
            t.embedding_row_bytes = 0.0 if embedding_read else facts.hidden_size * per_param
            if embedding_read:
                t.fixed_bytes_all += comp.params * per_param
                t.fixed_bytes_gpu += comp.params * per_param / tp
            continue
        dtype = scheme.compute_dtype if (scheme and per_param == scheme.weight_bytes and comp.linear) else "bf16"
        if comp.role == "experts":
            expert_bytes_by_layer[comp.layer or 0] = expert_bytes_by_layer.get(comp.layer or 0, 0.0) + comp.params * per_param
            flops = 2.0 * comp.params * min(k, comp.count)
            _add(t.flops_per_token, dtype, flops)
            _add(t.flops_per_token_gpu, dtype, flops / tp)
            continue
        t.fixed_bytes_all += comp.total_params * per_param
        t.fixed_bytes_gpu += comp.total_params * per_param * share
        if comp.linear or comp.role == "router":
            flops = 2.0 * comp.total_params
            _add(t.flops_per_token, dtype, flops)
            _add(t.flops_per_token_gpu, dtype, flops * share)
    t.expert_layers = [expert_bytes_by_layer[i] for i in sorted(expert_bytes_by_layer)]
    return t


def _use_checkpoint(t: Totals, w: Witness, facts: ModelFacts, embedding_read: bool) -> None:
    """The headers win: the step's bytes from the checkpoint, routed experts x k/E per MoE layer."""
    by = w.bytes_by_class
    routed = sum(w.routed_bytes_by_layer.values())
    if routed and not facts.num_experts:
        raise RooflineError(f"checkpoint {w.source}: has routed expert tensors ({routed / 1e9:.2f} GB) but the "
                            "config names no experts; cannot say how many a token reads")
    emb = float(by.get("embedding", 0))
    head_read = float(by.get("lm_head", 0)) or (emb if facts.tied_embeddings else 0.0)
    fixed = w.total_bytes - emb - routed - by.get("lm_head", 0) + head_read
    if embedding_read:
        fixed += emb
    ratio_fixed = fixed / t.fixed_bytes_all if t.fixed_bytes_all else 1.0
    ratio_stored = w.total_bytes / t.stored_bytes_all if t.stored_bytes_all else 1.0
    t.fixed_bytes_gpu *= ratio_fixed
    t.fixed_bytes_all = fixed
    t.stored_bytes_gpu *= ratio_stored
    t.stored_bytes_all = float(w.total_bytes)
    t.embedding_bytes = emb
    t.embedding_row_bytes = 0.0 if embedding_read else emb / facts.vocab_size
    if facts.num_experts:
        t.expert_layers = [w.routed_bytes_by_layer[i] / facts.num_experts for i in sorted(w.routed_bytes_by_layer)]


def _add(bucket: dict[str, float], key: str, value: float) -> None:
    bucket[key] = bucket.get(key, 0.0) + value
