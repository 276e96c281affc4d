"""The checkpoint as the witness: bytes by tensor class from the shard headers, checked against the config model.

Each tensor is placed by its name: embedding, LM head, attention, dense MLP,
routed experts, shared experts, router, norms, scales (and zero points), the
multi-token-prediction layers decode never runs, and the other towers of a
multimodal model. Scales also keep the place of the module they scale, so a
routed expert's scales are read only when the expert is. A tensor the rules
cannot place, holding more than 0.5% of the bytes, refuses the result by
its name prefix: an unknown block is exactly what a silent number hides.

When the headers are there they win: the step reads the checkpoint's bytes,
with routed expert tensors x k/E per MoE layer. Where the config model
differs (totals by more than 1%, or a class's dtype), the output names the
disagreement.
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from typing import Any

from .errors import RooflineError
from .shard_headers import CheckpointHeaders, Tensor

CLASSES = ("embedding", "lm_head", "attention", "dense_mlp", "routed_experts", "shared_experts", "router",
           "norms", "mtp", "other_towers")
UNPLACED_LIMIT = 0.005

_LAYER = re.compile(r"(?:^|\.)layers\.(\d+)\.")
_SCALE_LEAF = re.compile(r"(?:^|[._])(?:weight_scale(?:_inv|_2)?|input_scale|input_global_scale|weight_global_scale|"
                         r"scales?|qzeros|zeros|g_idx|weight_zero_point|k_scale|v_scale|weight_shape|"
                         r"[a-z_]*_scales)$")
_TOWERS = re.compile(r"(?:^|\.)(?:vision_tower|vision_model|visual|vision|multi_modal_projector|mm_projector|"
                     r"audio_tower|audio_model|audio|speech|image_newline|vision_embed_tokens)(?:\.|$)")
_EMBED = re.compile(r"(?:^|\.)(?:embed_tokens|wte|word_embeddings|tok_embeddings|embeddings)(?:\.|$)")
_HEAD = re.compile(r"(?:^|\.)(?:lm_head|embed_out)(?:\.|$)|^output\.weight$")
_MTP = re.compile(r"(?:^|\.)(?:mtp|nextn|eh_proj|enorm|hnorm|shared_head)(?:\.|$|_)")
_ROUTED = re.compile(r"\.(?:experts)(?:\.|_|$)")
_SHARED = re.compile(r"\.(?:shared_experts?|shared_mlp|shared_expert_ffn)(?:\.|$)")
_ROUTER = re.compile(r"\.(?:gate|router|shared_expert_gate|e_score_correction_bias|expert_bias|moe_statics)"
                     r"(?:\.weight|\.bias|\.e_score_correction_bias)?$|\.router\.|\.gate\.e_score")
_NORM = re.compile(r"(?:^|\.|_)(?:norm|layernorm|ln_f|ln_\d|rmsnorm|q_norm|k_norm)[a-z_0-9]*(?:\.weight|\.bias)?$"
                   r"|(?:^|\.)norm\.|(?:^|\.)(?:ln_f|final_layernorm)\.")
_MLP_LEAF = re.compile(r"\.(?:gate_proj|up_proj|down_proj|gate_up_proj|fc1|fc2|w1|w2|w3|c_fc|dense_h_to_4h|"
                       r"dense_4h_to_h|fc_in|fc_out)(?:\.|_|$)")
_ATTN_LEAF = re.compile(r"\.(?:q_proj|k_proj|v_proj|o_proj|qkv_proj|query_key_value|wqkv|wq|wk|wv|wo|c_attn|"
                        r"c_proj|in_proj|out_proj|conv1d|A_log|D|dt_bias|q_a_proj|q_b_proj|kv_a_proj_with_mqa|"
                        r"kv_b_proj|in_proj_qkvz|in_proj_ba|sinks|indexer|weights_proj|dense)(?:\.|_|$)")
_ATTN_BLOCK = re.compile(r"\.(?:self_attn|attn|attention|linear_attn|mixer|self_attention)\.")
_MLP_BLOCK = re.compile(r"\.(?:mlp|feed_forward|ffn|block_sparse_moe)\.")


def place(name: str, num_layers: int) -> tuple[str | None, bool, int | None]:
    """(class or None when unknown, is a scale or zero point, layer number)."""
    m = _LAYER.search(name)
    layer = int(m.group(1)) if m else None
    scale = bool(_SCALE_LEAF.search(name))
    if _TOWERS.search(name):
        return "other_towers", scale, layer
    before_layers = name.split("layers.")[0] if layer is not None else name
    if (layer is not None and layer >= num_layers) or _MTP.search(before_layers):
        return "mtp", scale, layer
    if _HEAD.search(name):
        return "lm_head", scale, layer
    if layer is None and _EMBED.search(name):
        return "embedding", scale, layer
    if layer is None and _NORM.search(name):
        return "norms", scale, layer
    if layer is None:
        return None, scale, layer
    if _SHARED.search(name):
        return "shared_experts", scale, layer
    if _ROUTED.search(name):
        return "routed_experts", scale, layer
    if _ROUTER.search(name):
        return "router", scale, layer
    if _NORM.search(name):
        return "norms", scale, layer
    if _MLP_LEAF.search(name) and not _ATTN_BLOCK.search(name.replace(".mixer.", ".x.")):
        return "dense_mlp", scale, layer
    if _ATTN_LEAF.search(name) or _ATTN_BLOCK.search(name):
        return "attention", scale, layer
    if _MLP_BLOCK.search(name):
        return "dense_mlp", scale, layer
    return None, scale, layer


# Storage width of each safetensors dtype, as the config model names it.
def width(dtype: str) -> str:
    if dtype in ("BF16", "F16"):
        return "16-bit"
    if dtype == "F32":
        return "32-bit"
    if dtype.startswith("F8") or dtype == "I8":
        return "8-bit"
    if dtype in ("U8", "I32", "F4", "F6_E2M3", "F6_E3M2"):
        return "4-bit packed"
    return dtype


@dataclass
class Witness:
    """What the headers say, and where the config model disagrees."""

    source: str
    total_bytes: int                         # everything decode keeps (MTP and other towers left out)
    bytes_by_class: dict[str, int]
    scale_bytes: int
    dtype_by_class: dict[str, str]           # the dtype holding most bytes of each class, scales aside
    routed_bytes_by_layer: dict[int, int]    # routed expert tensors (their scales included), per layer
    left_out: dict[str, int]                 # mtp, other_towers
    unplaced_bytes: int = 0
    disagreements: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {"source": self.source, "total_bytes": self.total_bytes, "bytes_by_class": self.bytes_by_class,
                "scale_bytes": self.scale_bytes, "dtype_by_class": self.dtype_by_class, "left_out": self.left_out,
                "unplaced_bytes": self.unplaced_bytes, "disagreements": list(self.disagreements)}


def _prefix(name: str) -> str:
    """A tensor's name with layer and expert numbers folded: model.layers.*.foo.bar."""
    parts = re.sub(r"\.\d+\.", ".*.", name).split(".")
    return ".".join(parts[:5])


def witness_from_headers(headers: CheckpointHeaders, num_layers: int, f32_served_as_16: bool = False) -> Witness:
    """Bytes by class from the headers; RooflineError names a large unplaceable prefix.

    `f32_served_as_16`: the server loads this float32 checkpoint in 16 bits (`--dtype auto`), so an F32
    tensor is read at half its stored bytes."""
    by_class = {c: 0 for c in CLASSES}
    dtype_bytes: dict[str, dict[str, int]] = {}
    routed: dict[int, int] = {}
    unplaced: dict[str, int] = {}
    scales = 0
    for t in headers.tensors:
        if f32_served_as_16 and t.dtype == "F32":
            t = Tensor(t.name, "BF16", t.nbytes // 2, t.shape)
        cls, scale, layer = place(t.name, num_layers)
        if cls is None:
            unplaced[_prefix(t.name)] = unplaced.get(_prefix(t.name), 0) + t.nbytes
            continue
        by_class[cls] += t.nbytes
        if scale and cls not in ("mtp", "other_towers"):
            scales += t.nbytes
        elif not scale:
            dtype_bytes.setdefault(cls, {})
            dtype_bytes[cls][t.dtype] = dtype_bytes[cls].get(t.dtype, 0) + t.nbytes
        if cls == "routed_experts" and layer is not None:
            routed[layer] = routed.get(layer, 0) + t.nbytes
    everything = headers.total_bytes or 1
    for prefix, size in sorted(unplaced.items(), key=lambda kv: -kv[1]):
        if size / everything > UNPLACED_LIMIT:
            raise RooflineError(f"checkpoint {headers.source}: tensors '{prefix}' ({size / everything:.1%} of the "
                                "bytes) belong to no block the roofline models; refusing rather than guessing")
    left_out = {c: by_class.pop(c) for c in ("mtp", "other_towers")}
    dtypes = {c: max(d, key=lambda k: d[k]) for c, d in dtype_bytes.items() if c not in left_out}
    total = sum(by_class.values()) + sum(unplaced.values())
    if not total:   # every comparison is relative to it; no real checkpoint's decode weights are empty
        raise RooflineError(f"checkpoint {headers.source}: the tensors decode reads hold no bytes")
    return Witness(source=headers.source, total_bytes=total,
                   bytes_by_class={c: b for c, b in by_class.items() if b}, scale_bytes=scales,
                   dtype_by_class=dtypes, routed_bytes_by_layer=routed, left_out={c: b for c, b in left_out.items() if b},
                   unplaced_bytes=sum(unplaced.values()))


# Config roles (components.ROLES) as checkpoint classes.
ROLE_CLASS = {"embedding": "embedding", "head": "lm_head", "attention": "attention", "indexer": "attention",
              "mlp": "dense_mlp", "shared": "shared_experts", "experts": "routed_experts", "router": "router",
              "small": "norms"}
_WIDTH_WORDS = {"16-bit": "16-bit", "32-bit": "32-bit", "8-bit": "8-bit", "4-bit packed": "4-bit"}


def config_width(bytes_per_param: float) -> str:
    if bytes_per_param >= 3.5:
        return "32-bit"
    if bytes_per_param >= 1.9:
        return "16-bit"
    if bytes_per_param >= 0.9:
        return "8-bit"
    return "4-bit packed"


def compare(witness: Witness, config_total: float, config_width_by_class: dict[str, str],
            config_bytes_by_class: dict[str, float]) -> list[str]:
    """Sentences naming every disagreement between the config model and the headers."""
    out = []
    if config_total and abs(witness.total_bytes - config_total) / witness.total_bytes > 0.01:
        worst = max(CLASSES, key=lambda c: abs(witness.bytes_by_class.get(c, 0) - config_bytes_by_class.get(c, 0)))
        out.append(f"config model gives {config_total / 1e9:.2f} GB of weights, the checkpoint has "
                   f"{witness.total_bytes / 1e9:.2f} GB ({(config_total / witness.total_bytes - 1):+.1%}); largest "
                   f"difference in {worst.replace('_', ' ')} (config {config_bytes_by_class.get(worst, 0) / 1e9:.2f} GB, "
                   f"checkpoint {witness.bytes_by_class.get(worst, 0) / 1e9:.2f} GB): the checkpoint's bytes are used")
    for cls, dtype in witness.dtype_by_class.items():
        expected = config_width_by_class.get(cls)
        if cls == "norms" or expected is None:
            continue
        got = width(dtype)
        if got != expected and not (expected == "16-bit" and got == "32-bit" and cls == "router"):
            out.append(f"config says {_WIDTH_WORDS.get(expected, expected)} {cls.replace('_', ' ')}, "
                       f"checkpoint has {dtype} {cls.replace('_', ' ')}: the checkpoint's bytes are used")
    return out
