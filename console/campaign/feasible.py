"""Feasibility before launch: does a config's weights plus KV cache fit the memory it is given?

A config whose weights and the KV cache of its highest concurrency at its
context cannot fit in the GPUs' memory times its memory fraction is launched,
waited for, and crashes: minutes of a campaign for nothing. The roofline knows
the bytes (its `Setup`: weights per GPU, KV per sequence at a context), the
config's flags give the layout, the context and the fraction (sglang
`--mem-fraction-static`, vLLM `--gpu-memory-utilization`, whose default is
0.9), so the check is arithmetic:

    needed    = weights per GPU × GPUs + KV per sequence × streams
    available = GPUs × memory per GPU × fraction

A llama.cpp config's KV is its `-c` tokens in all, shared by its slots. Unknown
inputs (no roofline for the profile, a CPU host) make the check say nothing,
never a refusal. `[policy] try_infeasible = true` launches anyway.
"""
from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

VLLM_DEFAULT_FRACTION = 0.9


@dataclass(frozen=True)
class Fit:
    needed_gb: float
    available_gb: float
    gpus: int
    gpu_gb: float
    fraction: float
    streams: int
    context: int

    @property
    def fits(self) -> bool:
        return self.needed_gb <= self.available_gb

    def text(self) -> str:
        verb = "fits" if self.fits else "cannot fit"
        return (f"{verb}: needs {self.needed_gb:.0f} GB (weights + KV for {self.streams} × {self.context} tokens), "
                f"{self.gpus}×{self.gpu_gb:.0f} GB × {self.fraction:g} leaves {self.available_gb:.0f}")

    def to_json(self) -> dict:
        return {**self.__dict__, "fits": self.fits, "text": self.text()}


def _whole(flags: dict, key: str) -> int | None:
    value = flags.get(key)
    return value if isinstance(value, int) and not isinstance(value, bool) and value > 0 else None


def fit(setup: Any, flags: dict, streams: int, context: int, server: str | None = None) -> Fit:
    """The arithmetic, from a roofline `Setup` (console.roofline.setup) and the config's parsed flags."""
    from ..roofline.step import kv_per_sequence

    tp = _whole(flags, "tp") or setup.tp
    gpus = tp * (_whole(flags, "dp") or 1) * (_whole(flags, "pp") or 1)
    fraction = flags.get("mem_fraction")
    if not isinstance(fraction, (int, float)) or isinstance(fraction, bool) or not 0 < fraction <= 1:
        fraction = VLLM_DEFAULT_FRACTION if server == "vllm" else 1.0
    context = _whole(flags, "context_length") or context
    at = replace(setup, context=context)
    kv_one, _flops = kv_per_sequence(at, per_gpu=True)
    kv = kv_one * tp * (1 if server == "llama.cpp" else streams)   # llama.cpp: -c is every slot's tokens at once
    weights = setup.totals.stored_bytes_gpu * gpus
    memory = float(setup.gpu.memory_gb)
    return Fit(needed_gb=(weights + kv) / 1e9, available_gb=gpus * memory * float(fraction), gpus=gpus,
               gpu_gb=memory, fraction=float(fraction), streams=streams, context=context)


def check(profile, config, streams: int, context: int) -> tuple[Fit | None, str]:
    """(the fit, "") for a launch config on a profile, or (None, why there is no check) when the profile
    has no roofline (no model config, no GPU: a CPU host)."""
    from ..roofline.errors import RooflineError
    from ..roofline.from_profile import compute_inputs, inputs_from_profile

    flags = dict(getattr(config, "flags", None) or {})
    parsed = getattr(config, "parsed", None)
    server = getattr(parsed, "server", None)
    try:
        inputs = inputs_from_profile(profile)
        tp = _whole(flags, "tp")
        if tp and inputs.count and tp <= inputs.count:
            inputs = inputs.with_changes(tp=tp)
        roof = compute_inputs(inputs.with_changes(context=_whole(flags, "context_length") or context), batches=[1])
        return fit(roof.setup, flags, streams, context, server if isinstance(server, str) else None), ""
    except (RooflineError, OSError, ValueError, KeyError, TypeError, AttributeError) as exc:
        return None, f"feasibility unknown: {str(exc).splitlines()[0] if str(exc) else type(exc).__name__}"
