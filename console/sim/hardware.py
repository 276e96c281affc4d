"""How each simulated GPU model introduces itself to nvidia-smi.

Names are the real marketing strings nvidia-smi prints, so that the GPU
catalogue matches them exactly as it would on a real host; only the table's
header line says SIMULATED.
"""
from __future__ import annotations

import re
import uuid
from dataclasses import dataclass


@dataclass(frozen=True)
class GPUModel:
    name: str               # as nvidia-smi prints it
    memory_mib: int         # memory.total
    power_limit_w: int
    idle_power_w: int
    max_sm_mhz: int
    idle_sm_mhz: int


CATALOGUE = (
    GPUModel("NVIDIA RTX PRO 6000 Blackwell Server Edition", 97887, 600, 34, 2430, 180),
    GPUModel("NVIDIA H200", 143771, 700, 76, 1980, 345),
    GPUModel("NVIDIA H100 80GB HBM3", 81559, 700, 70, 1980, 345),
    GPUModel("NVIDIA B200", 183359, 1000, 140, 1965, 345),
    GPUModel("NVIDIA A100-SXM4-80GB", 81920, 400, 60, 1410, 210),
    GPUModel("NVIDIA L40S", 46068, 350, 35, 2520, 210),
)
DEFAULT_GPU = CATALOGUE[0].name


def _norm(text: str) -> str:
    return re.sub(r"[^a-z0-9]+", " ", text.lower()).strip()


def find_gpu(name: str) -> GPUModel:
    """The catalogue entry whose name contains every word of `name` ("rtx pro 6000", "H200")."""
    wanted = _norm(name).replace("nvidia", "").split()
    if not wanted:
        raise ValueError("empty GPU name")
    for model in CATALOGUE:
        words = _norm(model.name).split()
        if all(w in words for w in wanted):
            return model
    for model in CATALOGUE:  # looser: substrings ("rtx-pro-6000" -> "rtx pro 6000")
        if all(w in _norm(model.name) for w in wanted):
            return model
    known = ", ".join(m.name for m in CATALOGUE)
    raise ValueError(f"unknown GPU {name!r} for the simulator (known: {known})")


def gpu_uuid(index: int, seed: str = "gpudeck-sim") -> str:
    """A stable, real-looking UUID for simulated GPU `index`."""
    return "GPU-" + str(uuid.uuid5(uuid.NAMESPACE_DNS, f"{seed}.{index}"))


def bus_id(index: int) -> str:
    return f"00000000:{0x18 + index * 0x10 if index < 14 else index:02X}:00.0"
