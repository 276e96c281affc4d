"""`nvidia-smi -L`: one line per GPU, MIG instances indented under it."""
from __future__ import annotations

import re
from typing import Sequence

from .model import GPU, MIGDevice, NA

_GPU = re.compile(r"^\s*GPU (\d+): (.+?) \(UUID: (GPU-[0-9a-fA-F-]+)\)")
_MIG = re.compile(r"^\s*MIG (\S+)\s+Device\s+(\d+): \(UUID: (MIG-[0-9a-fA-F-]+)\)")


def parse_list_lines(lines: Sequence[str]) -> list[GPU]:
    gpus: list[GPU] = []
    for line in lines:
        m = _GPU.match(line)
        if m:
            gpus.append(GPU(index=int(m.group(1)), name=m.group(2), uuid=m.group(3)))
            continue
        m = _MIG.match(line)
        if m and gpus:
            gpus[-1].mig_devices.append(MIGDevice(gpu_index=gpus[-1].index, gi=NA, ci=NA,
                                                  dev=int(m.group(2)), uuid=m.group(3),
                                                  profile=m.group(1)))
    return gpus
