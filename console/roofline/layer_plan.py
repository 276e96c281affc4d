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


def _window(doc: dict[str, Any]) -> int | None:
    window = doc.get("sliding_window")
    if window is None and doc.get("sliding_window_size") is not None:   # the older spelling (Gemma-2's first configs)
        window = doc.get("sliding_window_size")
    return int(window) if isinstance(window, (int, float)) and not isinstance(window, bool) and window > 0 else None


def defaulted(doc: dict[str, Any], key: str, value: Any, why: str) -> Any:
    """The config's value, or `value` with a warning when the config can carry one (TrackedConfig)."""
    got = doc.get(key)
    if got is not None:
        return got
    if hasattr(doc, "warnings"):
        doc.warnings.append(f"'{key}' absent: {value!r} assumed ({why})")
    return value


def plan_layers(doc: dict[str, Any], layers: int, moe_flags: list[bool], where: str, arch: str) -> list[LayerPlan]:
    """One LayerPlan per layer; RooflineError names the feature it cannot read."""
    model_type = str(doc.get("model_type") or "")
    pattern = doc.get("hybrid_override_pattern")
    block_types = doc.get("layers_block_type")
    if pattern is not None or block_types is not None:
        return _hybrid_pattern(pattern, block_types, layers, where, arch)
    ffn = ["moe" if m else "dense" for m in moe_flags]
    if doc.get("use_sliding_window") is False:
        _mark(doc, "sliding_window", "max_window_layers")   # windows switched off: the fields change nothing

    attn_list = doc.get("attn_type_list")
    if attn_list is not None:
        if not isinstance(attn_list, list) or len(attn_list) < layers:
            raise RooflineError(f"{where}: {arch}: 'attn_type_list' must list all {layers} layers")
        if any(v != 1 for v in attn_list[:layers]):
            raise RooflineError(f"{where}: {arch}: per-layer 'attn_type_list' mixes lightning (linear) attention "
                                "(0) with full attention (1); lightning attention is not modelled")
        # every entry 1: every layer is full softmax attention

    types = doc.get("layer_types")
    if types is not None:
        if not isinstance(types, list) or len(types) < layers:
            raise RooflineError(f"{where}: {arch}: 'layer_types' must list all {layers} layers")
        out = []
        for i, t in enumerate(types[:layers]):
            if not isinstance(t, str) or t not in _LAYER_TYPES:
                raise RooflineError(f"{where}: {arch}: layer type {t!r} in 'layer_types' is not modelled "
                                    f"(known: {', '.join(sorted(_LAYER_TYPES))})")
            mixer, windowed = _LAYER_TYPES[t]
            w = (_chunk(doc) if t == "chunked_attention" else _window(doc)) if windowed else None
            if windowed and not w:
                raise RooflineError(f"{where}: {arch}: layer {i} is {t!r} but the config has no 'sliding_window'")
            out.append(LayerPlan(mixer, ffn[i], w))
        interval = doc.get("full_attention_interval")     # a second spelling of the same plan: must agree
        if interval is not None and (isinstance(interval, bool) or not isinstance(interval, int) or interval < 1):
            raise RooflineError(f"{where}: {arch}: 'full_attention_interval' must be a whole number, got {interval!r}")
        if isinstance(interval, int) and interval > 0 and any(
                (p.mixer == "attention") != ((i + 1) % interval == 0) for i, p in enumerate(out)):
            raise RooflineError(f"{where}: {arch}: 'layer_types' and 'full_attention_interval' {interval} disagree "
                                "about which layers are full attention")
        if all(not p.window for p in out):
            _mark(doc, "sliding_window", "use_sliding_window", "max_window_layers")  # no layer slides
        return out

    interval = doc.get("full_attention_interval")
    if interval:
        if isinstance(interval, bool) or not isinstance(interval, int) or interval < 1:
            raise RooflineError(f"{where}: {arch}: 'full_attention_interval' must be a whole number, got {interval!r}")
        return [LayerPlan("attention" if (i + 1) % interval == 0 else "linear", ffn[i]) for i in range(layers)]

    if model_type.startswith("gemma3") and _window(doc):
        every = doc.get("_sliding_window_pattern") or defaulted(doc, "sliding_window_pattern", 6,
                                                                 "Gemma-3: five sliding layers, then one global")
        window = _window(doc)
        return [LayerPlan("attention", ffn[i], None if (i + 1) % int(every) == 0 else window) for i in range(layers)]
    if model_type == "gemma2" and _window(doc):
        # even layers slide, odd layers see everything (Gemma-2 alternates from layer 0)
        window = _window(doc)
        return [LayerPlan("attention", ffn[i], window if i % 2 == 0 else None) for i in range(layers)]
    if model_type.startswith("llama4") and _chunk(doc):
        return [LayerPlan("attention", ffn[i], _chunk(doc) if _rope_layer(doc, i) else None) for i in range(layers)]
    if model_type == "phi3" and doc.get("full_attn_mod") not in (None, 1):
        raise RooflineError(f"{where}: {arch}: 'full_attn_mod' {doc.get('full_attn_mod')} (some layers full, "
                            "the others sliding) is not modelled")
    if model_type in ("mistral", "mixtral", "phi3") and doc.get("use_sliding_window", True) and _window(doc):
        window = _window(doc)
        return [LayerPlan("attention", ffn[i], window) for i in range(layers)]
    return [LayerPlan("attention", ffn[i]) for i in range(layers)]


def _mark(doc: dict[str, Any], *keys: str) -> None:
    if hasattr(doc, "mark"):
        doc.mark(*keys)


def _chunk(doc: dict[str, Any]) -> int | None:
    value = doc.get("attention_chunk_size")
    return int(value) if isinstance(value, (int, float)) and not isinstance(value, bool) and value > 0 else None


def _rope_layer(doc: dict[str, Any], i: int) -> bool:
    """Llama-4: layers with RoPE use chunked attention; every `no_rope_layer_interval`-th layer is global."""
    flags = doc.get("no_rope_layers")
    if isinstance(flags, list) and len(flags) > i:
        return bool(flags[i])
    every = int(defaulted(doc, "no_rope_layer_interval", 4, "Llama-4: every fourth layer global") or 4)
    return (i + 1) % every != 0


_BLOCK_TYPES = {"mamba": "M", "attention": "*", "mlp": "-", "moe": "E"}


def _hybrid_pattern(pattern: Any, block_types: Any, layers: int, where: str, arch: str) -> list[LayerPlan]:
    """Nemotron-H's layer string, or its newer per-layer `layers_block_type` list (both must agree)."""
    from_list = None
    if block_types is not None:
        if not isinstance(block_types, list) or len(block_types) != layers:
            raise RooflineError(f"{where}: {arch}: 'layers_block_type' must list all {layers} layers")
        bad = sorted({str(t) for t in block_types if t not in _BLOCK_TYPES})
        if bad:
            raise RooflineError(f"{where}: {arch}: block type(s) {', '.join(map(repr, bad))} in 'layers_block_type' "
                                f"are not modelled (known: {', '.join(_BLOCK_TYPES)})")
        from_list = "".join(_BLOCK_TYPES[t] for t in block_types)
    if pattern is None:
        pattern = from_list
    elif from_list is not None and from_list != pattern:
        raise RooflineError(f"{where}: {arch}: 'layers_block_type' and 'hybrid_override_pattern' disagree "
                            "about which layer is which")
    if not isinstance(pattern, str) or len(pattern) != layers:
        raise RooflineError(f"{where}: {arch}: 'hybrid_override_pattern' must have one character per layer ({layers})")
    bad = sorted(set(pattern) - set(_NEMOTRON_H))
    if bad:
        raise RooflineError(f"{where}: {arch}: block type(s) {', '.join(map(repr, bad))} in 'hybrid_override_pattern' "
                            f"are not modelled (known: M Mamba-2, * attention, - MLP, E MoE)")
    return [LayerPlan(*_NEMOTRON_H[c]) for c in pattern]
