"""An executable named `nvidia-smi` that answers for the simulated GPUs.

The demo puts its folder first on PATH, so everything in gpudeck that runs
`nvidia-smi` (locally or through the local host transport) meets the
stand-in instead, reading the simulator's state in `state_dir`.
"""
from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path


def install_shim(bin_dir: Path | str, state_dir: Path | str, python: str | None = None) -> Path:
    """Write `<bin_dir>/nvidia-smi` (mode 0755) calling `python -m console sim nvidia-smi --state-dir ...`."""
    bin_dir = Path(bin_dir)
    bin_dir.mkdir(parents=True, exist_ok=True)
    path = bin_dir / "nvidia-smi"
    command = [python or sys.executable, "-m", "console", "sim", "nvidia-smi",
               "--state-dir", str(Path(state_dir).resolve())]
    path.write_text("#!/bin/sh\n# SIMULATED nvidia-smi: gpudeck's stand-in for the demo's simulated GPUs\n"
                    f"exec {shlex.join(command)} \"$@\"\n")
    os.chmod(path, 0o755)
    return path
