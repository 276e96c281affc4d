"""A host without nvidia-smi, over the real sshd: plain words, and a slow retry."""
from __future__ import annotations

import asyncio
import shutil

from console.gpus.sampler import MISSING_RETRY_S, Sampler
from console.hosts import SSHHost
from console.hosts.probe import check


async def test_gpus_tab_says_nvidia_smi_is_not_found_on_the_host_and_retries_slowly(ssh_profile):
    assert shutil.which("nvidia-smi") is None, "this test needs a box without nvidia-smi"
    host = SSHHost(ssh_profile)
    sampler = Sampler(host, 0.2)  # the plain `nvidia-smi`, as on an operator's host
    snaps = sampler.snapshots()
    try:
        snap = await asyncio.wait_for(snaps.__anext__(), 30)
    finally:
        await snaps.aclose()
        await host.close()
    assert snap.state == "no-driver"
    assert snap.message == "nvidia-smi not found on PATH of testbox"
    assert "eval" not in snap.message and "sh:" not in (snap.stale_reason or "")
    assert sampler.next_retry_s == MISSING_RETRY_S and MISSING_RETRY_S >= 300
    assert snap.stale_reason.endswith("checking again in 5 min")


async def test_profiles_check_and_the_gpus_tab_use_the_same_words(ssh_profile):
    result = await check(ssh_profile)
    host = SSHHost(ssh_profile)
    snaps = Sampler(host, 0.2).snapshots()
    try:
        snap = await asyncio.wait_for(snaps.__anext__(), 30)
    finally:
        await snaps.aclose()
        await host.close()
    assert result.gpu_note and snap.message.startswith(result.gpu_note)
