"""The GPU process list's CPU% and RSS, read with `ps` over the sampler's host connection, and its
sort keys. Real processes (a busy loop, a sleeper) stand behind the stand-in nvidia-smi's pids."""
from __future__ import annotations

import subprocess
import sys
import time

import pytest

from console.gpus.model import NA, GPUProcess
from console.gpus.proc_stats import PROCESS_SORTS, sort_processes
from console.gpus.sampler import Sampler
from console.hosts import LocalHost
from tests.gpus_standin import standin_command

GONE_PID = 4_000_000  # above any pid_max: no such process


@pytest.fixture
def busy_and_idle():
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    idle = subprocess.Popen(["sleep", "300"])
    yield busy.pid, idle.pid
    for proc in (busy, idle):
        proc.kill()
        proc.wait()


def apps_file(tmp_path, rows: list[tuple[int, int, str]]):
    path = tmp_path / "apps.csv"
    lines = ["pid, gpu_uuid, used_memory, process_name"]
    lines += [f"{pid}, GPU-aa000000-0000-4000-8000-000000000000, {mem}, {name}" for pid, mem, name in rows]
    path.write_text("\n".join(lines) + "\n")
    return path


def sampler_for(tmp_path, rows) -> Sampler:
    smi = standin_command("ticks-busy-8x.csv", None) + ["--apps", str(apps_file(tmp_path, rows))]
    return Sampler(LocalHost("box"), 0.2, smi_command=smi, use_nvml=False)


async def test_cpu_and_rss_of_each_process_from_ps(tmp_path, busy_and_idle):
    busy, idle = busy_and_idle
    sampler = sampler_for(tmp_path, [(busy, 100, "busy"), (idle, 200, "idle"), (GONE_PID, 300, "gone")])
    await sampler.read_apps()
    first = {p.pid: p for p in sampler._processes}
    # one read gives the RSS; the CPU% needs two (the load between them), so unknown, not 0
    assert first[busy].rss_mib is not NA and first[busy].rss_mib > 1
    assert first[busy].cpu_percent is NA
    deadline = time.monotonic() + 30
    while True:   # until ps's whole-second CPU time of the busy loop has moved since the first read
        await sampler.read_apps()
        procs = {p.pid: p for p in sampler._processes}
        if procs[busy].cpu_percent is not NA and procs[busy].cpu_percent > 0:
            break
        assert time.monotonic() < deadline, "the busy loop's CPU time never moved"
    assert procs[idle].cpu_percent is not NA and procs[idle].cpu_percent < procs[busy].cpu_percent
    assert procs[idle].rss_mib is not NA and procs[idle].rss_mib > 0
    # a pid ps does not know: unknown, never 0
    assert procs[GONE_PID].cpu_percent is NA and procs[GONE_PID].rss_mib is NA
    assert procs[GONE_PID].to_json()["cpu_percent"] is None


async def test_a_host_whose_ps_cannot_say_leaves_both_unknown(tmp_path, busy_and_idle, monkeypatch):
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "ps").write_text("#!/bin/sh\necho 'ps: unknown format specifier' >&2\nexit 1\n")
    (bin_dir / "ps").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}:/usr/bin:/bin")
    busy, idle = busy_and_idle
    sampler = sampler_for(tmp_path, [(busy, 100, "busy"), (idle, 200, "idle")])
    await sampler.read_apps()
    await sampler.read_apps()
    assert sampler._processes_known and len(sampler._processes) == 2
    assert all(p.cpu_percent is NA and p.rss_mib is NA for p in sampler._processes)


def test_sort_orders_put_unknown_last():
    procs = [GPUProcess(pid=30, name="b", used_memory_mib=100, cpu_percent=NA, rss_mib=50.0),
             GPUProcess(pid=10, name="c", used_memory_mib=300, cpu_percent=5.0, rss_mib=NA),
             GPUProcess(pid=20, name="a", used_memory_mib=NA, cpu_percent=90.0, rss_mib=10.0)]
    order = {by: [p.pid for p in sort_processes(procs, by)] for by in PROCESS_SORTS}
    assert order == {"memory": [10, 30, 20], "cpu": [20, 10, 30], "rss": [30, 20, 10],
                     "pid": [10, 20, 30], "name": [20, 30, 10]}


async def test_gpus_tab_sorts_the_process_list_and_shows_cpu_and_rss(tmp_path, busy_and_idle):
    """At 100x30: `s` cycles the order, the footer names it; CPU% and RSS columns, N/A where unknown."""
    from screens.gpus_pane import GPUsPane
    from tests.harness import HostApp, wait_until
    from tests.test_gpus_pane import local_profile, session_for
    from widgets.gpu_processes import GPUProcessTable

    busy, idle = busy_and_idle
    path = apps_file(tmp_path, [(busy, 100, "busy"), (idle, 300, "idle"), (GONE_PID, 200, "gone")])
    smi = standin_command("ticks-busy-8x.csv", None) + ["--apps", str(path)]
    app = HostApp(GPUsPane(), session_for(local_profile("box", smi)))
    async with app.run_test(size=(100, 30)) as pilot:
        table = app.query_one(GPUProcessTable)

        def column(key: str) -> list[str]:
            return [str(table.get_cell_at((row, table.get_column_index(key)))).strip()
                    for row in range(table.row_count)]

        def footer() -> dict[str, str]:
            return {str(k.key): str(k.description) for k in app.screen.query("FooterKey")}

        await wait_until(pilot, lambda: table.row_count == 3, what="the process list")
        assert column("pid") == [str(idle), str(GONE_PID), str(busy)]   # GPU memory, biggest first
        assert column("rss")[1] == "N/A" and column("cpu")[1] == "N/A"  # ps knows no such pid
        # the rows come with the GPU sample; ps's answer for them follows on the same connection
        await wait_until(pilot, lambda: column("rss")[0].endswith("MiB"), what="the idle process's RSS from ps")
        await wait_until(pilot, lambda: footer().get("s") == "sort: memory", what="the sort key in the footer")
        for _ in range(3):   # memory → cpu → rss → pid
            await pilot.press("s")
        await wait_until(pilot, lambda: footer().get("s") == "sort: pid", what="the footer naming the pid order")
        assert column("pid") == [str(p) for p in sorted([busy, idle, GONE_PID])]
        await pilot.press("s")
        await wait_until(pilot, lambda: column("pid") == [str(busy), str(GONE_PID), str(idle)], what="by name")
        assert footer().get("s") == "sort: name"
