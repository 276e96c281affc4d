"""The NVML reader's mapping to the model, with a small fake of the pynvml module.

The real library is exercised only where a GPU is present; this checks units
(bytes -> MiB, mW -> W), the P-state text, and that a failing call is NA.
"""
from __future__ import annotations

import types

from console.gpus.model import NA
from console.gpus.nvml import NVMLReader
from console.gpus.sampler import Sampler
from console.hosts import LocalHost


class NVMLError(Exception):
    pass


def fake_nvml(lost: bool = False):
    def not_supported(*_):
        raise NVMLError("Not Supported")

    def count():
        if lost:
            raise NVMLError("GPU is lost")
        return 2

    return types.SimpleNamespace(
        NVML_TEMPERATURE_GPU=0, NVML_CLOCK_SM=1,
        nvmlDeviceGetCount=count,
        nvmlDeviceGetHandleByIndex=lambda i: i,
        nvmlDeviceGetUUID=lambda h: f"GPU-{h}",
        nvmlDeviceGetName=lambda h: b"NVIDIA H200",
        nvmlDeviceGetPciInfo=lambda h: types.SimpleNamespace(busId=f"00000000:{h + 1:02X}:00.0"),
        nvmlDeviceGetUtilizationRates=lambda h: types.SimpleNamespace(gpu=100 * h, memory=3),
        nvmlDeviceGetMemoryInfo=lambda h: types.SimpleNamespace(used=h * 2048 * 1024 * 1024,
                                                                total=143771 * 1024 * 1024),
        nvmlDeviceGetTemperature=lambda h, kind: 30 + h,
        nvmlDeviceGetPowerUsage=lambda h: 76250,
        nvmlDeviceGetEnforcedPowerLimit=lambda h: 700000,
        nvmlDeviceGetClockInfo=lambda h, kind: 1980,
        nvmlDeviceGetMaxClockInfo=not_supported,
        nvmlDeviceGetPerformanceState=lambda h: 0 if h == 0 else 32,
        nvmlDeviceGetCurrentClocksEventReasons=lambda h: 0x4 if h else 0x1,
        nvmlDeviceGetComputeRunningProcesses=lambda h: [types.SimpleNamespace(pid=4242, usedGpuMemory=None)]
        if h == 0 else [],
        nvmlShutdown=lambda: None,
    )


def test_reader_maps_units_and_unknowns():
    gpus, procs = NVMLReader(fake_nvml()).read()
    g0, g1 = gpus
    assert (g0.name, g0.bus_id, g0.memory_total_mib, g1.memory_used_mib) == ("NVIDIA H200", "00000000:01:00.0", 143771, 2048)
    assert (g0.power_draw_w, g0.power_limit_w, g0.pstate, g1.pstate) == (76.25, 700, "P0", NA)
    assert g0.sm_clock_max_mhz is NA and g1.throttle_mask == 4
    assert [(p.pid, p.gpu_index, p.used_memory_mib) for p in procs] == [(4242, 0, NA)]


def test_reader_reports_the_error_text():
    assert NVMLReader(fake_nvml(lost=True)).read() == "GPU is lost"


async def test_sampler_uses_nvml_when_it_loads(monkeypatch):
    monkeypatch.setattr(NVMLReader, "open", classmethod(lambda cls: cls(fake_nvml())))
    sampler = Sampler(LocalHost(), 0.05)
    gen = sampler.snapshots()
    snaps = [await gen.__anext__() for _ in range(3)]
    await gen.aclose()
    assert sampler.source == "nvml" and snaps[-1].processes_known
    assert snaps[-1].gpus[0].flags == ["idle"]
    assert snaps[-1].gpus[1].flags == ["orphan-memory", "throttled", "busy"]   # 2 GiB held, no process


# -- the driver's reservation -------------------------------------------------------------------------
# An idle H200 (driver 580): nvidia-smi shows 0 MiB / 143771 MiB; NVML's first memory call says 615 MiB
# used, its v2 call 0 used and 615 reserved. With llama.cpp's server loaded: 9,979 against 10,593.
MIB = 1024 * 1024
H200_TOTAL, H200_RESERVED = 143771, 615


def fake_nvml_v2(used_mib: tuple[int, ...], v2: bool = True):
    """The fake above with NVML's two memory calls, as nvidia-ml-py binds them: v1 counts the
    reservation as used, v2 (`version=nvmlMemory_v2`) keeps it apart."""
    base = fake_nvml()
    n = len(used_mib)

    def memory(h, version=None):
        used = used_mib[h] * MIB
        if version is None:
            return types.SimpleNamespace(total=H200_TOTAL * MIB, used=used + H200_RESERVED * MIB,
                                         free=(H200_TOTAL - H200_RESERVED) * MIB - used)
        if not v2:
            raise NVMLError("Function Not Found")
        assert version == 0x02000028
        return types.SimpleNamespace(version=version, total=H200_TOTAL * MIB, reserved=H200_RESERVED * MIB,
                                     used=used, free=(H200_TOTAL - H200_RESERVED) * MIB - used)

    base.nvmlMemory_v2 = 0x02000028
    base.nvmlDeviceGetCount = lambda: n
    base.nvmlDeviceGetMemoryInfo = memory
    base.nvmlDeviceGetComputeRunningProcesses = lambda h: []
    return base


def test_used_memory_leaves_the_reservation_out_as_nvidia_smi_does():
    gpus, _ = NVMLReader(fake_nvml_v2((0, 9979))).read()
    assert [(g.memory_used_mib, g.memory_reserved_mib, g.memory_total_mib) for g in gpus] == \
        [(0, H200_RESERVED, H200_TOTAL), (9979, H200_RESERVED, H200_TOTAL)]
    assert gpus[0].to_json()["memory_used_mib"] == 0 and gpus[0].to_json()["memory_reserved_mib"] == H200_RESERVED


def test_without_the_v2_call_used_is_the_first_calls_and_the_reservation_unknown():
    gpus, _ = NVMLReader(fake_nvml_v2((0,), v2=False)).read()
    assert (gpus[0].memory_used_mib, gpus[0].memory_reserved_mib) == (H200_RESERVED, NA)
    assert "memory_reserved_mib" not in gpus[0].to_json()


def test_nvml_and_nvidia_smi_agree_on_one_idle_h200(shared_dir):
    """The real table of an idle 8 x H200 host against NVML's answers for the same state."""
    from console.gpus import parse_text

    table = parse_text((shared_dir / "corpus" / "nvidia-smi" / "01-table-8x-h200-idle-no-processes.txt").read_text())
    gpus, _ = NVMLReader(fake_nvml_v2((0,) * 8)).read()
    assert [(g.memory_used_mib, g.memory_total_mib) for g in gpus] == \
        [(g.memory_used_mib, g.memory_total_mib) for g in table.gpus] == [(0, H200_TOTAL)] * 8


async def test_an_idle_gpu_with_its_reservation_is_idle_not_holding_memory(monkeypatch):
    monkeypatch.setattr(NVMLReader, "open", classmethod(lambda cls: cls(fake_nvml_v2((0, 0)))))
    sampler = Sampler(LocalHost(), 0.05)
    gen = sampler.snapshots()
    snaps = [await gen.__anext__() for _ in range(3)]
    await gen.aclose()
    assert sampler.source == "nvml" and all("orphan-memory" not in g.flags for g in snaps[-1].gpus)
    assert [g.memory_used_mib for g in snaps[-1].gpus] == [0, 0]


def test_nvidia_smi_q_gives_the_reservation_too():
    from console.gpus import parse_text
    from tests.gpus_standin import FIXTURES

    snap = parse_text((FIXTURES / "query-q-rtx-a6000-windows-537.txt").read_text())
    assert (snap.gpus[0].memory_used_mib, snap.gpus[0].memory_reserved_mib, snap.gpus[0].memory_total_mib) == \
        (0, 569, 49140)
