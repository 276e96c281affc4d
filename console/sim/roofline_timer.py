"""The simulator's clock from gpudeck's roofline (console/roofline).

step_time_s(B) = the roofline's ideal decode step for batch B / efficiency,
so "3.4% of the ideal" means the same here as in the Roofline pane. A
prefill of N prompt tokens costs the weights read once plus N tokens of
compute, at the same efficiency.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any

from .config import SimConfig
from .timing import ScaledTimer


@dataclass
class ModelTiming:
    timer: ScaledTimer
    prefill_s: Any                    # callable(tokens) -> seconds
    arch: str                         # e.g. GlmMoeDsaForCausalLM, for the log
    quantization: str | None          # sglang's name for it, for server_args
    weights_bytes_per_gpu: float
    kv_dtype_bytes: float             # KV cache bytes per element (fp8: 1)
    ideal_single_tok_s: float
    gpu_name: str                     # the roofline catalogue's name


_SGLANG_QUANT = {"nvfp4": "modelopt_fp4", "fp8": "fp8", "mxfp4": "mxfp4", "int4": "awq", "int8": "w8a8_int8"}


def build_timing(cfg: SimConfig, config_doc: dict[str, Any]) -> ModelTiming:
    """Raise ValueError (RooflineError is one) with a one-line reason when the roofline cannot say."""
    from console.roofline.catalogue import find_gpu
    from console.roofline.model_facts import facts_from_config
    from console.roofline.quant import load_quant_file
    from console.roofline.setup import Setup
    from console.roofline.step import step_costs

    facts = facts_from_config(config_doc, name=cfg.model, where=str(cfg.model_config))
    gpu = find_gpu(cfg.gpu)
    quant: Any = cfg.quant
    if quant is None and cfg.quant_config is not None and Path(cfg.quant_config).exists():
        quant = load_quant_file(cfg.quant_config)
    setup = Setup.build(facts, gpu, cfg.tp, tp=cfg.tp, ep=cfg.ep, quant=quant, context=cfg.context)

    def ideal_step(batch: int) -> float:
        return step_costs(setup, batch).t_ideal_s

    def prefill_s(tokens: int) -> float:
        costs = step_costs(setup, max(1, tokens))
        return max(costs.t_ideal_compute_s, step_costs(setup, 1).t_ideal_mem_s) / cfg.efficiency

    overhead_s = cfg.step_overhead_ms / 1000.0
    timer = ScaledTimer(ideal_step, cfg.efficiency, overhead_s=overhead_s,
                        source=f"roofline ideal / {cfg.efficiency:g}" + (f" + {cfg.step_overhead_ms:g} ms" if overhead_s else ""))
    method = setup.scheme.method if setup.scheme else None
    arch = (config_doc.get("architectures") or ["CausalLM"])[0]
    return ModelTiming(timer=timer, prefill_s=prefill_s, arch=arch,
                       quantization=_SGLANG_QUANT.get(method or "", method),
                       weights_bytes_per_gpu=setup.totals.stored_bytes_gpu,
                       kv_dtype_bytes=float(setup.kv_bytes),
                       ideal_single_tok_s=1.0 / ideal_step(1), gpu_name=gpu.name)
