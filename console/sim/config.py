"""Every knob of `gpudeck sim serve`, with defaults that reproduce the real session.

The defaults are GLM-5-NVFP4 on 8x RTX PRO 6000 Blackwell, TP8, at 3.2% of
the ideal roofline: about 10.4 tok/s for one stream.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

from .hardware import DEFAULT_GPU

DEFAULT_MODEL = "GLM-5-NVFP4"
DEFAULT_EFFICIENCY = 0.0322  # 10.45 tok/s of a 324 tok/s ideal: the real session's 10.4 tok/s
CRASH_KINDS = ("illegal-address", "oom", "nccl", "hang")

# Models shipped with the package: name -> (config.json, hf_quant_config.json)
_PACKAGED = {
    "GLM-5-NVFP4": ("GLM-5-NVFP4.config.json", "GLM-5-NVFP4.hf_quant_config.json"),
}


def packaged_models() -> list[str]:
    return list(_PACKAGED)


def packaged_file(name: str) -> Path:
    """Path of a file in console/sim/data (works from an installed wheel too)."""
    return Path(str(resources.files("console.sim.data").joinpath(name)))


def model_files(model: str) -> tuple[Path, Path | None]:
    """(config.json, quant config or None) of a packaged model."""
    for known, (cfg, quant) in _PACKAGED.items():
        if known.lower() == model.lower():
            return packaged_file(cfg), packaged_file(quant) if quant else None
    raise ValueError(f"no packaged config for model {model!r} (packaged: {', '.join(_PACKAGED)}); "
                     "pass --model-config FILE")


def read_json(path: Path) -> dict[str, Any]:
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as exc:
        raise ValueError(f"{path}: {exc.strerror or exc}") from None
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}:{exc.lineno}: not JSON ({exc.msg})") from None
    if not isinstance(doc, dict):
        raise ValueError(f"{path}: expected a JSON object")
    return doc


@dataclass
class SimConfig:
    port: int = 30000
    host: str = "127.0.0.1"
    model: str = DEFAULT_MODEL              # served model name
    model_config: Path | None = None        # config.json; None = the packaged one for `model`
    quant_config: Path | None = None        # hf_quant_config.json
    gpu: str = DEFAULT_GPU
    count: int = 8
    tp: int = 8
    ep: int = 1
    quant: str | None = None                # e.g. "nvfp4"; None = what the quant config says
    efficiency: float = DEFAULT_EFFICIENCY
    step_overhead_ms: float = 0.0           # fixed time added to every decode step
    crash_at_concurrency: int | None = None
    crash_kind: str | None = None           # None: no fault (illegal-address when only N is given)
    startup_s: float = 3.0
    log: Path | None = None                 # None = stdout
    state_dir: Path | None = None
    mem_fraction: float = 0.85
    max_running_requests: int = 512
    cuda_graph_max_bs: int | None = None    # decode steps of larger batches run eager: + eager_step_ms each
    eager_step_ms: float = 100.0            # what an eager step costs over a graphed one (kernel launches)
    noise: float = 0.0                      # relative spread of step times, per step and per launch (0: exact)
    context: int = 4096                     # context the roofline assumes for KV reads
    seed: int = 0
    extra_args: dict[str, Any] = field(default_factory=dict)

    def resolve_files(self) -> None:
        """Fill model_config/quant_config from the packaged data when not given."""
        if self.model_config is None:
            cfg, quant = model_files(self.model)
            self.model_config = cfg
            if self.quant_config is None:
                self.quant_config = quant

    def fault_trigger(self) -> int | None:
        """Running-batch size at which the configured runtime fault fires (None: never)."""
        if self.crash_kind in (None, "oom"):
            return None
        return self.crash_at_concurrency or 1

    def validate(self) -> None:
        if not 0 < self.efficiency <= 1.0:
            raise ValueError(f"--efficiency must be in (0, 1], got {self.efficiency}")
        if not self.step_overhead_ms >= 0:
            raise ValueError(f"--step-overhead-ms must be >= 0, got {self.step_overhead_ms}")
        if self.count < 1 or self.tp < 1 or self.ep < 1:
            raise ValueError("--count, --tp and --ep must be at least 1")
        if self.tp > self.count:
            raise ValueError(f"--tp {self.tp} needs at least {self.tp} GPUs (--count {self.count})")
        if self.crash_kind is None and self.crash_at_concurrency is not None:
            self.crash_kind = "illegal-address"
        if self.crash_kind is not None and self.crash_kind not in CRASH_KINDS:
            raise ValueError(f"--crash-kind must be one of {', '.join(CRASH_KINDS)}")
        if self.crash_at_concurrency is not None and self.crash_at_concurrency < 1:
            raise ValueError("--crash-at-concurrency must be at least 1")
        if not 0 < self.mem_fraction < 1:
            raise ValueError(f"--mem-fraction must be in (0, 1), got {self.mem_fraction}")
        if self.max_running_requests < 1:
            raise ValueError("--max-running-requests must be at least 1")
        if not 0 <= self.noise <= 0.5:
            raise ValueError(f"--noise must be in [0, 0.5], got {self.noise}")
        if not self.eager_step_ms >= 0:
            raise ValueError(f"--eager-step-ms must be >= 0, got {self.eager_step_ms}")
        if self.cuda_graph_max_bs is not None and self.cuda_graph_max_bs < 1:
            raise ValueError("--cuda-graph-max-bs must be at least 1")
        if self.startup_s < 0:
            raise ValueError("--startup-s must not be negative")
