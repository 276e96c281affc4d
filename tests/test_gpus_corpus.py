"""Every real nvidia-smi sample in ../shared/corpus/nvidia-smi: no crash, and the right state.

Expectations were written by reading each file. A file added later without
an entry here is still checked for a sane result.
"""
from __future__ import annotations

import pytest

from console.gpus import NA, parse_text
from console.gpus.model import STATES
from tests.conftest import SHARED

CORPUS = SHARED / "corpus" / "nvidia-smi"

# file prefix -> (state, GPU count, process count, extra checks)
EXPECTED = {
    "01": ("ok", 8, 0, lambda s: all(g.memory_total_mib == 143771 and g.util_gpu_pct == 0 for g in s.gpus)
           and s.processes_known and s.gpus[7].bus_id == "00000000:B7:00.0"),
    "03": ("ok", 1, 1, lambda s: s.processes[0].pid == 5997 and s.processes[0].used_memory_mib == 794
           and s.gpus[0].memory_used_mib == 803 and "orphan-memory" not in s.gpus[0].flags),
    "05": ("ok", 1, 0, lambda s: s.processes_known and s.gpus[0].pstate == "P8" and s.gpus[0].power_limit_w == 320),
    "07": ("ok", 1, 19, lambda s: all(p.used_memory_mib is NA for p in s.processes)
           and s.processes[0].type == "C+G"),
    "09": ("ok", 2, 0, lambda s: s.gpus[1].temperature_c == 26 and s.gpus[0].name == "NVIDIA H100 80GB HBM3"),
    "11": ("ok", 1, 0, lambda s: s.gpus[0].memory_used_mib == 41774 and s.gpus[0].name == "NVIDIA H100 NVL"),
    "13": ("gpu-error", 0, 0, lambda s: "Unknown Error" in s.message),
    "15": ("gpu-lost", 0, 0, lambda s: "Reboot the system to recover this GPU" in s.message),
    "17": ("no-devices", 0, 0, lambda s: s.message == "No devices were found"),
    "19": ("ok", 1, 0, lambda s: [m.memory_used_mib for m in s.gpus[0].mig_devices] == [14366, 9826, 13]
           and s.gpus[0].index == 1),
    "21": ("ok", 1, 0, lambda s: len(s.gpus[0].mig_devices) == 7 and s.gpus[0].uuid.startswith("GPU-7fdaf0a5")),
    "23": ("ok", 2, 0, lambda s: all(g.util_gpu_pct is NA for g in s.gpus) and not s.processes_known),
    "25": ("ok", 0, 3, lambda s: s.processes[2].gpu_uuid == "GPU-777ead31-954e-837f-590f-6c4974d8e571"),
    "27": ("ok", 1, 0, lambda s: (s.gpus[0].util_gpu_pct, s.gpus[0].memory_used_mib, s.gpus[0].temperature_c)
           == (20, 682, 36)),
    "29": ("ok", 2, 0, lambda s: s.gpus[0].memory_used_mib == 166593 and s.gpus[1].power_limit_w == 1000
           and not any("orphan-memory" in g.flags for g in s.gpus)),   # no process list: not an orphan
    "31": ("unparsed", 0, 0, lambda s: "no header" in s.message),
}

FILES = sorted(p for p in CORPUS.glob("*") if p.is_file() and p.suffix == ".txt")


def test_corpus_is_there():
    assert FILES, f"no samples in {CORPUS}"


@pytest.mark.parametrize("path", FILES, ids=lambda p: p.name)
def test_corpus_file(path):
    snap = parse_text(path.read_text(errors="replace"))
    doc = snap.to_json()
    assert snap.state in STATES
    assert doc["state"] == snap.state and isinstance(doc["message"], str) and doc["message"]
    for gpu in doc["gpus"]:
        for key in ("utilization_gpu_pct", "memory_used_mib", "memory_total_mib", "temperature_c"):
            assert gpu[key] is None or isinstance(gpu[key], (int, float))
    expected = EXPECTED.get(path.name[:2])
    if expected is None:
        return
    state, n_gpus, n_procs, check = expected
    assert (snap.state, len(snap.gpus), len(snap.processes)) == (state, n_gpus, n_procs)
    assert check(snap)
