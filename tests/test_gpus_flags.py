"""Derived flags over successive samples."""
from __future__ import annotations

from console.gpus.flags import FlagTracker, stale_warning
from console.gpus.model import GPU, NA, GPUProcess, Snapshot


def gpu(i, util, used, total=97887, temp=40, mask=NA):
    return GPU(index=i, uuid=f"GPU-{i}", util_gpu_pct=util, memory_used_mib=used, memory_total_mib=total,
               temperature_c=temp, throttle_mask=mask)


def snap(gpus, processes=(), known=True):
    return Snapshot(gpus=gpus, processes=list(processes), processes_known=known)


def test_stale_needs_several_samples_in_a_row():
    tracker = FlagTracker(stale_after=3)
    for round_ in range(1, 5):
        s = tracker.apply(snap([gpu(0, 100, 0), gpu(1, 0, 0)]))
        assert ("stale" in s.gpus[0].flags) == (round_ >= 3)
        assert s.gpus[1].flags == ["idle"]
    s = tracker.apply(snap([gpu(0, 40, 0)]))          # the counter moved: the streak ends
    assert "stale" not in s.gpus[0].flags
    s = tracker.apply(snap([gpu(0, 100, 0)]))
    assert "stale" not in s.gpus[0].flags


def test_not_stale_with_memory_or_a_process_or_an_unknown_process_list():
    tracker = FlagTracker(stale_after=1)
    assert "stale" not in tracker.apply(snap([gpu(0, 100, 40000)])).gpus[0].flags
    with_proc = snap([gpu(0, 100, 0)], [GPUProcess(gpu_uuid="GPU-0", pid=7)])
    assert "stale" not in tracker.apply(with_proc).gpus[0].flags
    assert "stale" not in tracker.apply(snap([gpu(0, 100, 0)], known=False)).gpus[0].flags
    assert "stale" not in tracker.apply(snap([gpu(0, NA, 0)])).gpus[0].flags


def test_orphan_memory_hot_throttled_busy_idle():
    s = FlagTracker().apply(snap([gpu(0, 50, 30000, temp=90, mask=0x20 | 0x1), gpu(1, 2, 5000, mask=0x1)],
                                 [GPUProcess(gpu_uuid="GPU-1", pid=9)]))
    assert s.gpus[0].flags == ["orphan-memory", "hot", "throttled", "busy"]
    assert s.gpus[0].throttle_reasons == ["sw thermal"]
    assert s.gpus[1].flags == ["idle"]   # GpuIdle bit alone is not throttling


def test_unknown_values_raise_no_flags():
    s = FlagTracker(1).apply(snap([GPU(index=0)]))
    assert s.gpus[0].flags == []


def test_warning_sentence():
    tracker = FlagTracker(stale_after=1)
    s = tracker.apply(snap([gpu(i, 100, 0) for i in range(7)] + [gpu(7, 0, 0)]))
    assert stale_warning(s) == ("⚠ 7 GPUs read 100% with ~0 MiB and no process: "
                                "a stale counter after a crash, not work")
    assert s.summary() == "8 · 7 STALE"
    assert stale_warning(tracker.apply(snap([gpu(0, 0, 0)]))) is None
