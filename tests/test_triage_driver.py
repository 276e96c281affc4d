"""The driver's word: NVIDIA Xid / NVRM lines and amdgpu faults from the kernel log outrank the
log's phrase. Kernel texts are real (tests/fixtures/kernel/, sources in INDEX.tsv); the absent
case is this host's own kernel log, read locally and over a real sshd."""
from __future__ import annotations

import json
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest

from console.hosts import SSHHost
from console.hosts.local import LocalHost
from console.servers.triage import classify_file, driver
from console.servers.triage.process import ProcessEvidence, judge
from tests.cli import gpudeck

KERNEL = Path(__file__).parent / "fixtures" / "kernel"
CORPUS = Path(__file__).parent / "triage_corpus" / "logs"
SERVING = CORPUS / "vllm-16107-v0-docker-startup-complete-heartbeats.log"  # a healthy vLLM (ready, metrics)


def kernel(name: str) -> str:
    return (KERNEL / name).read_text()


@pytest.mark.parametrize("name, xid, cls", [
    ("nvsentinel-155-xid-79-fallen-off-bus.txt", 79, "gpu-fault"),
    ("gpud-46-dmesg-ctime-xid-13-then-109.txt", 13, "cuda-illegal-address"),
    ("sglang-34260-xid-13-cga-exception-cta-not-present.txt", 13, "cuda-illegal-address"),
    ("sglang-29160-dmesg-xid-31-mmu-fault.txt", 31, "cuda-illegal-address"),
    ("bumblebee-677-xid-32-and-31.txt", 31, "cuda-illegal-address"),
])
def test_real_xid_lines_are_read_with_their_meaning(name, xid, cls):
    event = driver.decisive(driver.parse(kernel(name)))
    assert event is not None and (event.xid, event.cls) == (xid, cls)


def test_an_xid_line_names_its_gpu_and_process():
    [event] = driver.parse(kernel("sglang-29160-dmesg-xid-31-mmu-fault.txt"))
    assert (event.pci, event.pid, event.process) == ("0000:70:00", 684430, "python3")


def test_a_gpu_that_fell_off_the_bus_without_an_xid_and_a_gsp_timeout_are_gpu_faults():
    fallen = driver.decisive(driver.parse(kernel("nvsentinel-155-dmesg-nvrm-fallen-off-bus.txt")))
    gsp = driver.decisive(driver.parse(kernel("open-gpu-kernel-modules-1230-gsp-heartbeat-timeout.txt")))
    assert fallen is not None and fallen.cls == "gpu-fault" and "fell off" in fallen.meaning
    assert gsp is not None and gsp.cls == "gpu-fault"


@pytest.mark.parametrize("name", ["rocm-6139-amdgpu-gfxhub-page-fault-llama-cli.txt",
                                  "rocm-amdgpu-172-no-retry-page-fault-pt-main-thread.txt"])
def test_amdgpu_page_faults_are_memory_faults(name):
    event = driver.decisive(driver.parse(kernel(name)))
    assert event is not None and (event.vendor, event.cls) == ("amd", "cuda-illegal-address")


def test_xids_that_only_follow_another_outrank_nothing():
    assert driver.decisive(driver.parse(kernel("open-gpu-kernel-modules-1150-xid-45-after-149.txt"))) is None


def test_an_xid_79_outranks_a_log_that_looked_healthy():
    log = classify_file(SERVING)
    assert log.cls == "healthy"
    out = driver.apply(log, driver.parse(kernel("nvsentinel-155-xid-79-fallen-off-bus.txt")))
    assert (out.cls, out.state) == ("gpu-fault", "crashed")
    assert "driver" in out.evidence_kinds and out.to_json()["confidence"] >= 0.97
    assert "Xid 79" in out.summary and out.excerpt[0].startswith("NVRM: Xid")


def test_the_driver_does_not_turn_a_requested_stop_into_a_crash():
    stopped = judge(classify_file(SERVING), ProcessEvidence(exit_status=0, stopped_by_operator=True, ended=True))
    out = driver.apply(stopped, driver.parse(kernel("nvsentinel-155-xid-79-fallen-off-bus.txt")))
    assert (out.cls, out.state) == ("healthy", "stopped")
    assert any("Xid 79" in note for note in out.evidence)


def test_the_absent_case_on_this_host_leaves_the_verdict_as_it_was():
    """This host's journal has no entries (its real `journalctl -k` output is a fixture too); the
    read falls back to dmesg or says why neither could be read, and never raises."""
    assert kernel("this-host-journalctl-k-window-no-entries.stdout").strip() == "-- No entries --"
    now = datetime.now(timezone.utc)
    import asyncio

    log = asyncio.run(driver.read(LocalHost(), now - timedelta(minutes=15), now))
    assert log.readable or log.notes
    out = driver.apply(classify_file(SERVING), driver.parse(log.text), log)
    assert out.cls == "healthy" and out.evidence[-1].startswith("kernel log")


def test_no_kernel_log_readable_is_said_not_raised(monkeypatch):
    monkeypatch.setenv("PATH", "/nonexistent")
    import asyncio

    now = datetime.now(timezone.utc)
    log = asyncio.run(driver.read(LocalHost(), now - timedelta(minutes=5), now))
    assert not log.readable and any(note.startswith("journalctl") for note in log.notes)
    out = driver.apply(classify_file(SERVING), [], log)
    assert out.cls == "healthy" and "not readable" in out.evidence[-1]


async def test_the_kernel_log_is_read_over_ssh_the_same_way(ssh_profile):
    host = SSHHost(ssh_profile)
    try:
        now = datetime.now(timezone.utc)
        log = await driver.read(host, now - timedelta(minutes=15), now)
    finally:
        await host.close()
    assert log.readable or log.notes  # the sshd's host has no GPU: no event, and no exception
    assert driver.decisive(driver.parse(log.text)) is None


def test_cli_reads_a_saved_kernel_log(tmp_path):
    doc = json.loads(gpudeck("triage", str(SERVING), "--kernel-log",
                             str(KERNEL / "gpud-46-dmesg-ctime-xid-13-then-109.txt"), "--json").stdout)
    assert doc["class"] == "cuda-illegal-address" and doc["decided_by"] == "driver: Xid 13"
    assert "driver" in doc["evidence_kinds"]
    plain = gpudeck("triage", str(SERVING), "--kernel-log", str(KERNEL / "nvsentinel-155-xid-79-fallen-off-bus.txt"))
    assert plain.stdout.startswith("gpu-fault") and "kernel log" in plain.stdout
