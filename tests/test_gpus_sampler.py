"""The sampler over the real test sshd, with the nvidia-smi stand-in on the far side."""
from __future__ import annotations

import asyncio
import contextlib
import os
import signal

import pytest

from console.gpus import Sampler, sample_once
from console.hosts import LocalHost, SSHHost
from profiles.profile import profile_from_dict
from tests.gpus_standin import standin_command


@contextlib.asynccontextmanager
async def ssh_host(profile):
    host = SSHHost(profile)
    try:
        yield host
    finally:
        await host.close()


async def take(sampler: Sampler, n: int, timeout: float = 30.0, until=None) -> list:
    out = []
    gen = sampler.snapshots()
    try:
        async with asyncio.timeout(timeout):
            async for snap in gen:
                out.append(snap)
                if (until and until(snap, out)) or (not until and len(out) >= n):
                    break
    finally:
        await gen.aclose()
    return out


async def test_samples_arrive_through_one_stream(ssh_profile):
    async with ssh_host(ssh_profile) as host:
        sampler = Sampler(host, 0.2, smi_command=standin_command("ticks-busy-8x.csv", "apps-busy-8x.csv"))
        snaps = await take(sampler, 0, until=lambda s, out: sum(x.processes_known for x in out) >= 4)
    live = [s for s in snaps if s.processes_known]
    assert all(s.state == "ok" and len(s.gpus) == 8 and not s.sample_stale for s in snaps)
    assert [s.taken_at for s in snaps] == sorted(s.taken_at for s in snaps)
    last = live[-1]
    assert [p.gpu_index for p in last.processes] == list(range(8))    # tied to GPUs by uuid
    assert all("stale" not in g.flags and "orphan-memory" not in g.flags for g in last.gpus)
    assert sampler.restarts == 0 and sampler.source == "nvidia-smi"
    assert last.gpus[3].name == "NVIDIA RTX PRO 6000 Blackwell Server Edition"


async def test_killed_stream_reconnects_and_marks_the_gap(ssh_profile, tmp_path):
    pidfile = tmp_path / "smi.pid"
    async with ssh_host(ssh_profile) as host:
        sampler = Sampler(host, 0.2, smi_command=standin_command("ticks-busy-8x.csv", None, "--pidfile", str(pidfile)))
        killed = {}

        def step(snap, out):
            fresh = [s for s in out if not s.sample_stale]
            if len(fresh) == 2 and not killed:
                killed["pid"] = int(pidfile.read_text())
                os.kill(killed["pid"], signal.SIGKILL)
            stale = [i for i, s in enumerate(out) if s.sample_stale]
            return bool(stale) and len(out) > stale[0] + 2

        snaps = await take(sampler, 0, until=step)
    gap = next(s for s in snaps if s.sample_stale)
    assert gap.state == "ok" and len(gap.gpus) == 8            # the last numbers, marked stale
    assert "exited" in gap.stale_reason and "retrying" in gap.stale_reason
    after = snaps[snaps.index(gap) + 1:]
    assert after and all(not s.sample_stale and s.taken_at > gap.taken_at for s in after)
    assert sampler.restarts == 1
    assert int(pidfile.read_text()) != killed["pid"]


async def test_stale_pattern_is_flagged_after_several_samples(ssh_profile):
    async with ssh_host(ssh_profile) as host:
        sampler = Sampler(host, 0.2, smi_command=standin_command("ticks-stale-8x.csv", "apps-none.csv"))
        snaps = await take(sampler, 0, until=lambda s, out: s.flag_count("stale") > 0 or len(out) > 40)
    last = snaps[-1]
    assert [g.index for g in last.gpus if "stale" in g.flags] == [0, 1, 2, 3, 4, 5, 6]
    assert last.summary() == "8 · 7 STALE"
    with_processes = [s for s in snaps if s.processes_known]
    assert len(with_processes) >= 3                              # never on a single sample
    assert not any(s.flag_count("stale") for s in snaps[:-1])


async def test_old_driver_field_list_fallback(ssh_profile):
    async with ssh_host(ssh_profile) as host:
        sampler = Sampler(host, 0.2, smi_command=standin_command("ticks-hot-orphan-2x.csv", "apps-none.csv",
                                                                 "--old-driver"))
        snaps = await take(sampler, 0, until=lambda s, out: s.processes_known)
    assert sampler.fields[-1] == "clocks_throttle_reasons.active"
    gpu0 = snaps[-1].gpus[0]
    assert gpu0.power_draw_w.to_json() is None
    assert gpu0.flags == ["orphan-memory", "hot", "throttled", "busy"] and gpu0.throttle_reasons == ["sw thermal"]


@pytest.mark.parametrize("text, state", [
    ("No devices were found\n", "no-devices"),
    ("NVIDIA-SMI has failed because it couldn't communicate with the NVIDIA driver.\n", "no-driver"),
])
async def test_error_output_becomes_a_state(ssh_profile, tmp_path, text, state):
    err = tmp_path / "err.txt"
    err.write_text(text)
    async with ssh_host(ssh_profile) as host:
        snap = await sample_once(host, smi_command=standin_command("ticks-busy-8x.csv", None, "--error", str(err)))
    assert snap.state == state and snap.gpus == []


async def test_missing_nvidia_smi_on_the_host_is_no_driver(ssh_profile):
    async with ssh_host(ssh_profile) as host:
        snap = await sample_once(host, smi_command=["/nonexistent/bin/nvidia-smi"])
    assert snap.state == "no-driver" and "not found" in snap.message


async def test_unreachable_host(tmp_path):
    from tests.realparts import free_port

    profile = profile_from_dict("nowhere", {"transport": "ssh",
                                            "ssh": {"host": "127.0.0.1", "port": free_port(), "connect_timeout_s": 2}})
    host = SSHHost(profile)
    try:
        snap = await sample_once(host, smi_command=["nvidia-smi"], timeout_s=10)
    finally:
        await host.close()
    assert snap.state == "unreachable" and "refused" in snap.message


async def test_local_falls_back_to_nvidia_smi_when_nvml_does_not_load(monkeypatch):
    import pynvml

    def broken():
        raise pynvml.NVMLError(pynvml.NVML_ERROR_LIBRARY_NOT_FOUND)

    monkeypatch.setattr(pynvml, "nvmlInit", broken)
    sampler = Sampler(LocalHost(), 0.2, smi_command=standin_command("ticks-busy-8x.csv"), use_nvml=True)
    snaps = await take(sampler, 2)
    assert sampler.source == "nvidia-smi" and all(len(s.gpus) == 8 for s in snaps)


def test_local_profile_prefers_nvml():
    assert Sampler(LocalHost(), 1.0).use_nvml is True
    assert Sampler(LocalHost(), 1.0, smi_command=["x"]).use_nvml is False
