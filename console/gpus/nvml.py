"""Reading the local GPUs through NVML (the nvidia-ml-py package).

Used for the local profile when the library loads and initialises; any
failure to start returns None and the caller falls back to nvidia-smi.
"""
from __future__ import annotations

from typing import Any

from .model import GPU, GPUProcess, NA

MIB = 1024 * 1024


def _na(call, *args) -> Any:
    try:
        return call(*args)
    except Exception:
        return NA


def _text(value: Any) -> Any:
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    return value


class NVMLReader:
    def __init__(self, nvml):
        self.nvml = nvml

    @classmethod
    def open(cls) -> "NVMLReader | None":
        try:
            import pynvml

            pynvml.nvmlInit()
        except Exception:
            return None
        return cls(pynvml)

    def close(self) -> None:
        try:
            self.nvml.nvmlShutdown()
        except Exception:
            pass

    def read(self) -> tuple[list[GPU], list[GPUProcess]] | str:
        """All GPUs and compute processes now, or the NVML error text."""
        n = self.nvml
        try:
            count = n.nvmlDeviceGetCount()
            gpus, processes = [], []
            for i in range(count):
                h = n.nvmlDeviceGetHandleByIndex(i)
                gpu = GPU(index=i, uuid=_text(_na(n.nvmlDeviceGetUUID, h)), name=_text(_na(n.nvmlDeviceGetName, h)))
                pci = _na(n.nvmlDeviceGetPciInfo, h)
                gpu.bus_id = _text(pci.busId) if pci is not NA else NA
                util = _na(n.nvmlDeviceGetUtilizationRates, h)
                if util is not NA:
                    gpu.util_gpu_pct, gpu.util_mem_pct = util.gpu, util.memory
                _read_memory(n, h, gpu)
                gpu.temperature_c = _na(n.nvmlDeviceGetTemperature, h, n.NVML_TEMPERATURE_GPU)
                draw = _na(n.nvmlDeviceGetPowerUsage, h)
                gpu.power_draw_w = round(draw / 1000, 2) if draw is not NA else NA
                limit = _na(n.nvmlDeviceGetEnforcedPowerLimit, h)
                gpu.power_limit_w = round(limit / 1000, 2) if limit is not NA else NA
                gpu.sm_clock_mhz = _na(n.nvmlDeviceGetClockInfo, h, n.NVML_CLOCK_SM)
                gpu.sm_clock_max_mhz = _na(n.nvmlDeviceGetMaxClockInfo, h, n.NVML_CLOCK_SM)
                pstate = _na(n.nvmlDeviceGetPerformanceState, h)
                gpu.pstate = f"P{pstate}" if pstate is not NA and pstate != 32 else NA
                reasons = getattr(n, "nvmlDeviceGetCurrentClocksEventReasons", None) \
                    or getattr(n, "nvmlDeviceGetCurrentClocksThrottleReasons", None)
                gpu.throttle_mask = _na(reasons, h) if reasons else NA
                gpus.append(gpu)
                for proc in _na(n.nvmlDeviceGetComputeRunningProcesses, h) or []:
                    used = getattr(proc, "usedGpuMemory", None)
                    processes.append(GPUProcess(
                        gpu_index=i, pid=proc.pid, type="C", name=_process_name(proc.pid),
                        used_memory_mib=used // MIB if isinstance(used, int) else NA,
                        gpu_uuid=gpu.uuid))
            return gpus, processes
        except Exception as exc:  # NVMLError_GpuIsLost and friends
            return str(exc) or type(exc).__name__


def _read_memory(n, handle, gpu: GPU) -> None:
    """Used memory as nvidia-smi shows it. NVML's first memory call counts the driver's reservation
    as used (615 MiB on an idle H200 that nvidia-smi shows at 0 MiB); the v2 call keeps it apart, so
    used is nvidia-smi's figure and the reservation is its own. Drivers or bindings without v2 get the
    first call, whose `used` is all there is."""
    version = getattr(n, "nvmlMemory_v2", None)
    mem = _na(n.nvmlDeviceGetMemoryInfo, handle, version) if version is not None else NA
    if mem is not NA and getattr(mem, "reserved", None) is not None:
        gpu.memory_reserved_mib = mem.reserved // MIB
    else:
        mem = _na(n.nvmlDeviceGetMemoryInfo, handle)
    if mem is not NA:
        gpu.memory_used_mib = mem.used // MIB
        gpu.memory_total_mib = mem.total // MIB


def _process_name(pid: int) -> Any:
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            raw = f.read().split(b"\0")[0]
        return raw.decode("utf-8", errors="replace") or NA
    except OSError:
        return NA
