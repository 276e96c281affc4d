"""One weight tensor group of a model, as the roofline counts it.

A model is a flat list of `Component`s named like the Hugging Face modules
(`model.layers.3.self_attn.o_proj`), so that the exclusion lists of
quantisation configs can be matched against the same names.
"""
from __future__ import annotations

from dataclasses import dataclass

# What a component is, which decides how it is sharded and when it is read.
ROLES = (
    "embedding",   # input table: one row read per token
    "head",        # output projection: read whole every step
    "attention",   # q/k/v/o or the MLA projections
    "indexer",     # the sparse-attention indexer's projections (GLM-5, DeepSeek-V3.2)
    "mlp",         # a dense feed-forward block
    "shared",      # shared experts: read every step
    "experts",     # routed experts: `count` copies of `params` each
    "router",      # expert gate
    "small",       # norms, biases, sinks: replicated, never quantised
)


@dataclass(frozen=True)
class Component:
    path: str            # module path as in the checkpoint
    role: str            # one of ROLES
    params: int          # parameters of one copy (one expert for role "experts")
    count: int = 1       # number of experts for role "experts", else 1
    linear: bool = True  # a matrix a quantiser may convert (biases and norms are not)
    replicated_in_tp: bool = False  # every TP rank holds the whole thing
    layer: int | None = None

    @property
    def total_params(self) -> int:
        return self.params * self.count
