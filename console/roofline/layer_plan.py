"""What each decoder layer is: its token mixer, its feed-forward block and its attention window.

Configs say this in several dialects: `layer_types` (Gemma-3, gpt-oss,
Qwen3-Next), `full_attention_interval` (Qwen3-Next, Qwen3.5),
`sliding_window_pattern` (Gemma-3), alternation (Gemma-2),
`hybrid_override_pattern` (Nemotron-H), chunked attention and interleaved
MoE (Llama-4). One plan per model keeps the parameter count and the KV
bytes reading the same answer. A dialect the roofline cannot read is
refused by name rather than guessed.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .errors import RooflineError

MIXERS = ("attention", "linear", "mamba", "none")   # linear = Gated DeltaNet (linear attention)
FFNS = ("dense", "moe", "none")


@dataclass(frozen=True)
class LayerPlan:
    mixer: str                 # one of MIXERS
    ffn: str                   # one of FFNS
    window: int | None = None  # tokens an attention layer keeps; None = the whole context


_LAYER_TYPES = {
    "full_attention": ("attention", False),
    "attention": ("attention", False),
    "global": ("attention", False),
    "sliding_attention": ("attention", True),
    "local": ("attention", True),
    "chunked_attention": ("attention", True),
    "linear_attention": ("linear", False),
}

_NEMOTRON_H = {"M": ("mamba", "none"), "*": ("attention", "none"), "-": ("none", "dense"), "E": ("none", "moe")}


def describe_arch(doc: dict[str, Any]) -> str:
    """The architecture as its config names it, for error messages."""
    archs = doc.get("architectures")
    if isinstance(archs, list) and archs and isinstance(archs[0], str):
        return archs[0]
    return str(doc.get("model_type") or "unknown architecture")


def plan_layers(doc: dict[str, Any], layers: int, moe_flags: list[bool], where: str, arch: str) -> list[LayerPlan]:
    """One LayerPlan per layer; RooflineError names the feature it cannot read."""
    model_type = str(doc.get("model_type") or "")
    pattern = doc.get("hybrid_override_pattern")
    if pattern is not None:
        return _hybrid_pattern(pattern, layers, where, arch)
    ffn = ["moe" if m else "dense" for m in moe_flags]
    window = doc.get("sliding_window")
    window = int(window) if isinstance(window, (int, float)) and not isinstance(window, bool) and window > 0 else None

    types = doc.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) < layers:
            raise RooflineError(f"{where}: {arch}: 'layer_types' must list all {layers} layers")
        out = []
        for i, t in enumerate(types[:layers]):
            if t not in _LAYER_TYPES:
                raise RooflineError(f"{where}: {arch}: layer type {t!r} in 'layer_types' is not modelled "
                                    f"(known: {', '.join(sorted(_LAYER_TYPES))})")
            mixer, windowed = _LAYER_TYPES[t]
            w = (_chunk(doc) if t == "chunked_attention" else window) if windowed else None
            if windowed and not w:
                raise RooflineError(f"{where}: {arch}: layer {i} is {t!r} but the config has no 'sliding_window'")
            out.append(LayerPlan(mixer, ffn[i], w))
        return out

    interval = doc.get("full_attention_interval")
    if interval:
        n = int(interval)
        return [LayerPlan("attention" if (i + 1) % n == 0 else "linear", ffn[i]) for i in range(layers)]

    if model_type.startswith("gemma3") and window:
        every = int(doc.get("sliding_window_pattern") or doc.get("_sliding_window_pattern") or 6)
        return [LayerPlan("attention", ffn[i], None if (i + 1) % every == 0 else window) for i in range(layers)]
    if model_type == "gemma2" and window:
        # even layers slide, odd layers see everything (Gemma-2 alternates from layer 0)
        return [LayerPlan("attention", ffn[i], window if i % 2 == 0 else None) for i in range(layers)]
    if model_type.startswith("llama4") and _chunk(doc):
        return [LayerPlan("attention", ffn[i], _chunk(doc) if _rope_layer(doc, i) else None) for i in range(layers)]
    if window and model_type in ("mistral", "mixtral") and doc.get("use_sliding_window", True):
        return [LayerPlan("attention", ffn[i], window) for i in range(layers)]
    return [LayerPlan("attention", ffn[i]) for i in range(layers)]


def _chunk(doc: dict[str, Any]) -> int | None:
    value = doc.get("attention_chunk_size")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _rope_layer(doc: dict[str, Any], i: int) -> bool:
    """Llama-4: layers with RoPE use chunked attention; every `no_rope_layer_interval`-th layer is global."""
    flags = doc.get("no_rope_layers")
    if isinstance(flags, list) and len(flags) > i:
        return bool(flags[i])
    every = int(doc.get("no_rope_layer_interval") or 4)
    return (i + 1) % every != 0


def _hybrid_pattern(pattern: Any, layers: int, where: str, arch: str) -> list[LayerPlan]:
    if not isinstance(pattern, str) or len(pattern) != layers:
        raise RooflineError(f"{where}: {arch}: 'hybrid_override_pattern' must have one character per layer ({layers})")
    bad = sorted(set(pattern) - set(_NEMOTRON_H))
    if bad:
        raise RooflineError(f"{where}: {arch}: block type(s) {', '.join(map(repr, bad))} in 'hybrid_override_pattern' "
                            f"are not modelled (known: M Mamba-2, * attention, - MLP, E MoE)")
    return [LayerPlan(*_NEMOTRON_H[c]) for c in pattern]
