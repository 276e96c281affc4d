"""Token mixers with a fixed-size state instead of a KV cache: Gated DeltaNet and Mamba-2.

Each returns the layer's weight components and the state one sequence keeps
(in elements). A decode step reads that state once per sequence whatever the
context, so it adds bytes per sequence but none per token of context.
"""
from __future__ import annotations

from typing import Any

from .components import Component
from .errors import RooflineError
from .config_keys import count
from .layer_plan import defaulted


def _whole(doc: dict[str, Any], key: str, default: int, why: str, where: str) -> int:
    """A whole number from the config, or the default with a warning; a list is refused by name."""
    if doc.get(key) is None:
        return int(defaulted(doc, key, default, why))
    return count(doc, key, default, where)


def _need(doc: dict[str, Any], key: str, where: str, arch: str, what: str) -> int:
    value = doc.get(key)
    if isinstance(value, list):
        value = count(doc, key, 0, where)
    if isinstance(value, bool) or not isinstance(value, (int, float)) or value <= 0:
        raise RooflineError(f"{where}: {arch}: {what} needs field '{key}'")
    return int(value)


def gated_deltanet(doc: dict[str, Any], prefix: str, i: int, hidden: int, where: str, arch: str) -> tuple[list[Component], int]:
    """Qwen3-Next / Qwen3.5 linear attention: projections, short conv, per-head decay, output."""
    what = "Gated DeltaNet (linear attention)"
    nk = _need(doc, "linear_num_key_heads", where, arch, what)
    nv = _need(doc, "linear_num_value_heads", where, arch, what)
    dk = _need(doc, "linear_key_head_dim", where, arch, what)
    dv = _need(doc, "linear_value_head_dim", where, arch, what)
    kernel = _whole(doc, "linear_conv_kernel_dim", 4, "Gated DeltaNet's short convolution", where)
    key_dim, value_dim = nk * dk, nv * dv
    conv_dim = 2 * key_dim + value_dim
    p = f"{prefix}.linear_attn"
    comps = [
        Component(f"{p}.in_proj_qkvz", "attention", hidden * (2 * key_dim + 2 * value_dim), layer=i),
        Component(f"{p}.in_proj_ba", "attention", hidden * 2 * nv, layer=i),
        Component(f"{p}.conv1d", "small", conv_dim * kernel, linear=False, layer=i),
        Component(f"{p}.decay", "small", 2 * nv + dv, linear=False, layer=i),   # dt_bias, A_log, norm
        Component(f"{p}.out_proj", "attention", value_dim * hidden, layer=i),
    ]
    state = nv * dk * dv + conv_dim * (kernel - 1)
    return comps, state


def mamba2(doc: dict[str, Any], prefix: str, i: int, hidden: int, where: str, arch: str) -> tuple[list[Component], int]:
    """Nemotron-H's Mamba-2 mixer: in_proj to x, z, B, C and dt; depthwise conv; out_proj."""
    what = "a Mamba-2 layer"
    heads = _need(doc, "mamba_num_heads", where, arch, what)
    head_dim = _need(doc, "mamba_head_dim", where, arch, what)
    state_size = _need(doc, "ssm_state_size", where, arch, what)
    groups = _whole(doc, "n_groups", 1, "one B/C group", where)
    kernel = _whole(doc, "conv_kernel", 4, "Mamba-2's short convolution", where)
    inner = heads * head_dim
    if hasattr(doc, "mark"):
        # the inner width is mamba_num_heads x mamba_head_dim; 'expand' is the training recipe's
        # nominal factor and 'chunk_size' the scan's block: neither changes a shape
        doc.mark("expand", "chunk_size", "mamba_proj_bias")
    conv_dim = inner + 2 * groups * state_size
    p = f"{prefix}.mixer"
    in_proj = hidden * (2 * inner + 2 * groups * state_size + heads)
    comps = [
        Component(f"{p}.in_proj", "attention", in_proj, layer=i),
        Component(f"{p}.conv1d", "small", conv_dim * kernel + (conv_dim if defaulted(doc, "use_conv_bias", True, "conv bias") else 0),
                  linear=False, layer=i),
        Component(f"{p}.ssm", "small", 3 * heads + inner, linear=False, layer=i),  # dt_bias, A_log, D, norm
        Component(f"{p}.out_proj", "attention", inner * hidden, layer=i),
    ]
    if doc.get("use_bias"):
        comps.append(Component(f"{p}.bias", "small", 2 * inner + 2 * groups * state_size + heads + hidden,
                               linear=False, layer=i))
    state = heads * head_dim * state_size + conv_dim * (kernel - 1)
    return comps, state
