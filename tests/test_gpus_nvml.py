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
