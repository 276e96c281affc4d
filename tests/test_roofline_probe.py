"""`gpudeck roofline --probe`: refused while a process holds a GPU, refused in one line where neither PyTorch
nor CuPy can measure, and the figures it measures kept as the catalogue's `achievable` for the realistic bound.

This machine has no GPU: nvidia-smi and the host's python3 are stand-ins on PATH, the probe itself is the
real command line `gpudeck roofline --probe` against the local profile.
"""
from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from console.roofline.catalogue import _read, find_gpu
from console.roofline.probe import ProbeResult, catalogue_entry
from tests.cli import gpudeck


def _stand_ins(tmp_path: Path, compute_apps: str) -> dict[str, str]:
    """PATH with an nvidia-smi that lists `compute_apps`, and a python3 that has neither torch nor cupy."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    smi = bin_dir / "nvidia-smi"
    smi.write_text(f"#!/bin/sh\nprintf '%s' '{compute_apps}'\n")
    blocked = tmp_path / "blocked"
    blocked.mkdir()
    for lib in ("torch", "cupy"):   # importing either fails, whatever this machine has installed
        (blocked / f"{lib}.py").write_text("raise ImportError('not installed')\n")
    py = bin_dir / "python3"
    py.write_text(f"#!/bin/sh\nPYTHONPATH={blocked} exec {sys.executable} \"$@\"\n")
    for f in (smi, py):
        f.chmod(f.stat().st_mode | stat.S_IXUSR)
    return {"PATH": f"{bin_dir}{os.pathsep}{os.environ['PATH']}"}


def test_probe_refuses_while_a_process_holds_a_gpu(tmp_path, gpudeck_home):
    env = _stand_ins(tmp_path, "4242, /usr/bin/python3 -m vllm.entrypoints.openai.api_server, 70000 MiB\n")
    out = gpudeck("roofline", "--probe", env=env)
    assert out.returncode != 0
    assert "refused while a process holds a GPU (4242" in out.stderr and "stop the server first" in out.stderr


def test_probe_says_so_where_neither_pytorch_nor_cupy_is_installed(tmp_path, gpudeck_home):
    out = gpudeck("roofline", "--probe", env=_stand_ins(tmp_path, ""))
    assert out.returncode != 0
    assert "neither PyTorch with CUDA nor CuPy is importable" in out.stderr
    assert len(out.stderr.strip().splitlines()) == 1


def test_a_probed_figure_becomes_the_catalogue_entry_the_realistic_bound_reads(tmp_path):
    spec = find_gpu("NVIDIA H200")
    result = ProbeResult("gpu-box", "torch 2.11", [{"index": 0, "name": "NVIDIA H200", "read_gbs": 4150.2,
                                                     "bf16_tflops": 657.4}], "2026-12-04")
    path = tmp_path / "gpus.toml"
    path.write_text(catalogue_entry(spec, result.gpus[0], result))
    (kept,) = _read(path, "user")
    assert kept.key == spec.key and kept.tflops == spec.tflops and kept.aliases == spec.aliases
    assert kept.realistic_bandwidth_gbs()[0] == 4150 and kept.realistic_tflops("bf16") == 657
    assert kept.figures_from["achievable"].startswith("measured 2026-12-04 on gpu-box GPU 0 (NVIDIA H200) by "
                                                      "gpudeck roofline --probe (torch 2.11)")


@pytest.mark.parametrize("line", ["", "No running processes found\n"])
def test_an_idle_gpu_is_not_busy(line):
    from console.roofline.probe import busy_pids

    assert busy_pids(line) == []
