"""The other towers of a multimodal model (vision, audio) and the MTP layers: what the checkpoint holds beside the
language model that decode runs.

Decode reads the language model for every token; a vision tower runs once
per image, an MTP layer only when speculative decoding uses it. Their bytes
are named beside the decode figure, not added to it: from the shard headers
when they are there (checkpoint.Witness.left_out), else from the tower's
own config as an estimate that says so. A tower whose config does not give
its shape (a custom encoder named only by a model name) is None: unknown,
never 0.
"""
from __future__ import annotations

from typing import Any

_GATED = ("silu", "swiglu", "swish")


def _int(doc: dict[str, Any], *keys: str) -> int:
    for key in keys:
        value = doc.get(key)
        if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0:
            return int(value)
    return 0


def vit_params(vc: dict[str, Any], text_hidden: int) -> int | None:
    """Parameters of a ViT-style tower from its config (Qwen2/2.5/3-VL, SigLIP, MoonViT, InternViT),
    with its patch embedding, position table and the merger/projector into the language model;
    None when the config does not give depth and width."""
    depth = _int(vc, "depth", "num_hidden_layers", "layers", "num_layers")
    width = _int(vc, "embed_dim", "width", "hidden_size") if vc.get("embed_dim") else _int(vc, "hidden_size", "width")
    if not depth or not width:
        return None
    ratio = vc.get("mlp_ratio")
    inter = _int(vc, "intermediate_size") or (int(width * ratio) if isinstance(ratio, (int, float)) else 4 * width)
    gated = str(vc.get("hidden_act") or "").lower() in _GATED
    matrices = 3 if gated else 2
    layer = 4 * width * width + 4 * width                 # q, k, v, out with biases
    layer += matrices * width * inter + inter * (matrices - 1) + width
    layer += 4 * width                                    # two norms, weight and bias
    total = depth * layer
    patch = _int(vc, "patch_size", "spatial_patch_size") or 14
    channels = _int(vc, "in_channels", "in_chans", "num_channels") or 3
    total += channels * _int(vc, "temporal_patch_size") * patch * patch * width if vc.get("temporal_patch_size") \
        else channels * patch * patch * width + width
    positions = _int(vc, "num_position_embeddings")
    image = _int(vc, "image_size")
    if positions:
        total += positions * width
    elif image and not vc.get("spatial_merge_size"):
        total += (image // patch) ** 2 * width
    merge = _int(vc, "spatial_merge_size")
    out = _int(vc, "out_hidden_size") or text_hidden
    if merge:   # Qwen-VL merger: the merged patches through an MLP into the language model's width
        merged = width * merge * merge
        mergers = 1 + len(vc.get("deepstack_visual_indexes") or [])
        total += mergers * (merged * merged + merged + merged * out + out + 2 * merged)
    elif out:   # a projector from the tower's width to the language model's
        total += width * out
    return total


def tower_params(doc: dict[str, Any], text_hidden: int) -> dict[str, int | None]:
    """Parameters of each other tower the config describes: {"vision_config": N or None, ...}."""
    out: dict[str, int | None] = {}
    for key in ("vision_config", "audio_config", "speech_config"):
        value = doc.get(key)
        if isinstance(value, dict):
            out[key] = vit_params(value, text_hidden) if key == "vision_config" else None
    return out
