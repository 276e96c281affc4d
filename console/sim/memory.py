"""Where each simulated GPU's memory goes: weights, KV cache, the rest.

sglang reserves `mem_fraction_static` of each GPU for weights plus the KV
pool; what is left after the weights becomes KV cache. The weight share per
GPU comes from the roofline when it can say, else from the model config's
parameter count at the quantised width.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any

CONTEXT_OVERHEAD_MIB = 620      # CUDA context, NCCL buffers
GRAPH_MIB = 1350                # CUDA graphs and activations outside the static pool


@dataclass(frozen=True)
class MemoryPlan:
    total_mib: int
    static_mib: int              # mem_fraction_static * total
    weights_mib: int             # per GPU
    kv_mib: int                  # per GPU
    kv_tokens: int               # max_total_num_tokens
    kv_bytes_per_token: int

    @property
    def used_mib(self) -> int:
        """What nvidia-smi shows per GPU once the server is ready."""
        return min(self.total_mib - 200, self.static_mib + CONTEXT_OVERHEAD_MIB + GRAPH_MIB)

    @property
    def fits(self) -> bool:
        return self.kv_tokens > 0


def kv_bytes_per_token(config: dict[str, Any], tp: int, kv_dtype_bytes: float = 1.0) -> int:
    """KV cache bytes one token costs on one GPU (MLA keeps one latent per layer on every rank)."""
    layers = int(config.get("num_hidden_layers") or 32)
    if config.get("kv_lora_rank"):
        width = int(config["kv_lora_rank"]) + int(config.get("qk_rope_head_dim") or 0)
        index = int(config.get("index_head_dim") or 0)
        return int(layers * (width + index) * kv_dtype_bytes)
    heads = int(config.get("num_key_value_heads") or config.get("num_attention_heads") or 8)
    head_dim = int(config.get("head_dim") or (int(config.get("hidden_size", 4096)) //
                                              int(config.get("num_attention_heads", 32))))
    per_rank_heads = max(1, heads // max(1, tp))
    return int(2 * layers * per_rank_heads * head_dim * kv_dtype_bytes)


def plan(total_mib: int, mem_fraction: float, weights_bytes_per_gpu: float,
         kv_per_token: int) -> MemoryPlan:
    static = int(total_mib * mem_fraction)
    weights = int(weights_bytes_per_gpu / 2**20)
    kv = max(0, static - weights)
    tokens = int(kv * 2**20 / kv_per_token) if kv_per_token > 0 else 0
    return MemoryPlan(total_mib, static, weights, kv, tokens, kv_per_token)
