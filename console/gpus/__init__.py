"""GPU state of a host: sampling, parsing every nvidia-smi form, derived flags.

    from console.gpus import Sampler, parse_text, NA
    async for snap in Sampler(host, 1.0).snapshots(): ...
"""
from .fleet import SamplerGroup, fleet_row, sampler_for
from .flags import stale_warning
from .model import GPU, NA, GPUProcess, MIGDevice, Snapshot, known
from .parse import parse_text
from .sampler import Sampler, sample_once

__all__ = ["SamplerGroup", "fleet_row", "sampler_for", "stale_warning", "GPU", "NA", "GPUProcess",
           "MIGDevice", "Snapshot", "known", "parse_text", "Sampler", "sample_once"]
