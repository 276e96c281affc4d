"""A one-shot GPU reading over SSH (`gpudeck gpus -p HOST`): one session, and no more samples than the flags need.

Every SSH session pays the host's login shell, so the reading asks for the
process list at the head of the GPU stream's own session and opens no other
(no latency ping, no separate compute-apps call). It stops at the first
sample with the process list unless a GPU is part-way to the stale flag.
"""
from __future__ import annotations

from console.gpus import sample_once
from console.gpus.flags import STALE_SAMPLES, FlagTracker
from console.gpus.model import GPU, Snapshot
from console.hosts import SSHHost, host_for
from tests.gpus_standin import standin_command


class CountingHost(SSHHost):
    """The real SSH host, recording every session it opens and the lines read from each stream."""

    def __init__(self, profile, **kw):
        super().__init__(profile, **kw)
        self.runs: list[list[str]] = []
        self.streams = []

    async def run(self, argv, **kw):
        self.runs.append(list(argv))
        return await super().run(argv, **kw)

    def stream(self, argv):
        stream = super().stream(argv)
        stream.lines_read = 0
        read = stream._readline

        async def counted():
            raw = await read()
            stream.lines_read += bool(raw)
            return raw

        stream._readline = counted
        self.streams.append(stream)
        return stream


async def _once(profile, ticks: str, apps: str) -> tuple[Snapshot, CountingHost]:
    host = CountingHost(profile, measure_latency=False)
    try:
        snap = await sample_once(host, smi_command=standin_command(ticks, apps))
    finally:
        await host.close()
    return snap, host


async def test_one_session_brings_the_process_list_and_the_gpus(ssh_profile):
    snap, host = await _once(ssh_profile, "ticks-busy-8x.csv", "apps-busy-8x.csv")
    assert snap.state == "ok" and len(snap.gpus) == 8 and snap.processes_known
    assert [p.gpu_index for p in snap.processes] == list(range(8))        # tied to the GPUs by uuid
    assert all("orphan-memory" not in g.flags for g in snap.gpus)
    assert host.runs == [] and len(host.streams) == 1                      # no ping, no separate apps call


async def test_no_process_list_means_orphaned_memory_is_still_flagged(ssh_profile):
    snap, _host = await _once(ssh_profile, "ticks-busy-8x.csv", "apps-none.csv")
    assert snap.processes_known and snap.processes == []
    assert all("orphan-memory" in g.flags for g in snap.gpus)


async def test_one_sample_is_read_when_no_gpu_is_on_the_way_to_stale(ssh_profile):
    snap, host = await _once(ssh_profile, "ticks-busy-8x.csv", "apps-busy-8x.csv")
    apps_and_marker = 8 + 1
    assert host.streams[0].lines_read == apps_and_marker + 8     # one sample of eight GPUs
    assert not any("stale" in g.flags for g in snap.gpus)


async def test_a_stale_pattern_is_followed_until_it_counts(ssh_profile):
    snap, host = await _once(ssh_profile, "ticks-stale-8x.csv", "apps-none.csv")
    assert host.streams[0].lines_read == 1 + STALE_SAMPLES * 8   # empty list, its end, three samples
    assert [g.index for g in snap.gpus if "stale" in g.flags] == list(range(7))


async def test_missing_nvidia_smi_is_still_named(ssh_profile):
    host = host_for(ssh_profile, measure_latency=False)
    try:
        snap = await sample_once(host, smi_command=["/nonexistent/bin/nvidia-smi"])
    finally:
        await host.close()
    assert snap.state == "no-driver" and "not found" in snap.message


def test_tracker_says_when_a_streak_has_begun():
    tracker = FlagTracker()
    candidate = lambda: Snapshot(state="ok", gpus=[GPU(index=0, uuid="GPU-a", util_gpu_pct=100,  # noqa: E731
                                                       memory_used_mib=0, memory_total_mib=80000)],
                                 processes=[], processes_known=True)
    assert not tracker.building()
    for _ in range(STALE_SAMPLES - 1):
        tracker.apply(candidate())
        assert tracker.building()
    tracker.apply(candidate())
    assert not tracker.building()          # the flag is raised: nothing left to wait for
