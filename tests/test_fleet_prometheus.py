"""A fleet read from a real Prometheus scraping simulated DCGM exporters every second."""
from __future__ import annotations

import asyncio
import json
import os
import time

import pytest

from console.gpus.prometheus import PrometheusFleet, PromSettings
from console.sim.dcgm import host_dir, host_name
from console.sim.nvidia_smi import derived
from console.sim.state import gpu_rows, write_state
from console.sim.hardware import find_gpu
from tests.cli import gpudeck
from tests.prometheus_part import Prometheus, SimExporters
from tests.realparts import free_port

HOSTS, GPUS = 3, 2


@pytest.fixture(scope="module")
def fleet(tmp_path_factory):
    base = tmp_path_factory.mktemp("fleet")
    exporters = SimExporters.start(base / "state", HOSTS, GPUS)
    prom = Prometheus(base / "prom", exporters.targets).start()
    try:
        prom.wait_up(HOSTS)
        yield exporters, prom
    finally:
        prom.stop()
        exporters.stop()


def sample_until(url: str, predicate, timeout: float = 20.0):
    """Sample the fleet until `predicate(sample)` holds; the last sample either way."""
    async def go():
        fleet = PrometheusFleet(PromSettings(url=url), simulated=True)
        try:
            deadline = time.monotonic() + timeout
            while True:
                sample = await fleet.sample()
                if predicate(sample) or time.monotonic() > deadline:
                    return sample
                await asyncio.sleep(0.25)
        finally:
            await fleet.close()
    return asyncio.run(go())


def by_host(sample):
    return {h.host: h for h in sample.hosts}


def test_every_gpu_and_value_matches_the_simulated_state(fleet):
    exporters, prom = fleet
    rows = gpu_rows(find_gpu("RTX PRO 6000 Blackwell"), GPUS)
    rows[0].update(memory_used_mib=84217, utilization_gpu=97, utilization_memory=41)
    rows[1].update(memory_used_mib=84100, utilization_gpu=12, utilization_memory=3)
    write_state(host_dir(exporters.state_dir, 1), {"pid": os.getpid(), "status": "ready", "gpus": rows,
                                                    "processes": []})

    def loaded(sample):
        h = by_host(sample).get(host_name(1))
        return h is not None and h.gpus and h.gpus[0].memory_used_mib == 84217
    sample = sample_until(prom.url, loaded)
    hosts = by_host(sample)
    assert sorted(hosts) == [host_name(i) for i in range(HOSTS)]
    for i in range(HOSTS):
        assert len(hosts[host_name(i)].gpus) == GPUS
    for gpu, row in zip(hosts[host_name(1)].gpus, rows):
        want = derived(row)
        assert gpu.index == row["index"] and gpu.uuid == row["uuid"] and gpu.name == row["name"]
        assert gpu.util_gpu_pct == row["utilization_gpu"]
        assert gpu.util_mem_pct == row["utilization_memory"]
        assert gpu.memory_used_mib == row["memory_used_mib"]
        assert gpu.memory_total_mib == row["memory_total_mib"]
        assert gpu.temperature_c == want["temperature_c"]
        assert gpu.power_draw_w == pytest.approx(want["power_draw_w"], abs=0.01)
        assert gpu.sm_clock_mhz == want["sm_mhz"]
        assert gpu.xid == 0
    assert sample.simulated and not sample.error


def test_a_simulated_crash_leaves_the_same_stale_picture_in_dcgm_and_nvidia_smi(fleet):
    exporters, prom = fleet
    rows = gpu_rows(find_gpu("RTX PRO 6000 Blackwell"), GPUS)
    for r in rows:
        r.update(memory_used_mib=3, utilization_gpu=100)
    state = host_dir(exporters.state_dir, 2)
    write_state(state, {"pid": None, "status": "crashed", "crash_kind": "illegal-address", "gpus": rows,
                        "processes": []})
    sample = sample_until(prom.url, lambda s: all("stale" in g.flags for g in by_host(s)[host_name(2)].gpus))
    assert all("stale" in g.flags for g in by_host(sample)[host_name(2)].gpus)
    smi = gpudeck("sim", "nvidia-smi", "--state-dir", str(state), "--query-gpu=utilization.gpu,memory.used",
                  "--format=csv,noheader,nounits")
    assert smi.returncode == 0, smi.stderr
    assert [line.split(", ") for line in smi.stdout.splitlines()] == [["100", "3"]] * GPUS


def test_an_injected_xid_shows_its_flag(fleet):
    exporters, prom = fleet
    exporters.post(0, "/sim/xid?gpu=1&code=79")
    sample = sample_until(prom.url, lambda s: "xid-79" in by_host(s)[host_name(0)].gpus[1].flags)
    assert "xid-79" in by_host(sample)[host_name(0)].gpus[1].flags
    assert not any(f.startswith("xid") for f in by_host(sample)[host_name(0)].gpus[0].flags)


def test_a_dead_exporter_makes_its_host_unreachable_with_the_time_it_went_down(fleet):
    exporters, prom = fleet
    victim = HOSTS - 1
    killed_at = time.time()
    exporters.post(victim, "/sim/down")
    sample = sample_until(prom.url, lambda s: by_host(s).get(host_name(victim)) is not None
                          and by_host(s)[host_name(victim)].state == "unreachable")
    host = by_host(sample)[host_name(victim)]
    assert host.state == "unreachable"
    assert host.taken_at is not None and killed_at - 1.5 <= host.taken_at <= time.time()
    assert "down since" in host.message
    print(f"\nunreachable seen {time.time() - killed_at:.1f} s after the exporter stopped (scrape interval 1 s)")
    others = [h for h in sample.hosts if h.host != host_name(victim)]
    assert all(h.state == "ok" for h in others)


def test_profiles_check_counts_targets_and_gpus(fleet):
    exporters, prom = fleet
    assert gpudeck("profiles", "add", "cluster", "--prometheus", prom.url).returncode == 0
    out = gpudeck("profiles", "check", "cluster", "--json")
    doc = json.loads(out.stdout)
    assert doc["ok"] is True and doc["gpus"] >= (HOSTS - 1) * GPUS and doc["dcgm_targets_up"] >= HOSTS - 1


def test_profiles_check_says_one_line_when_prometheus_is_down():
    port = free_port()
    assert gpudeck("profiles", "add", "gone", "--prometheus", f"http://127.0.0.1:{port}").returncode == 0
    out = gpudeck("profiles", "check", "gone")
    assert out.returncode == 1
    assert out.stdout.count("\n") == 1 and "cannot connect" in out.stdout and "Traceback" not in out.stderr


def test_profiles_check_says_one_line_for_a_url_that_is_not_prometheus(fleet):
    exporters, _prom = fleet
    url = f"http://127.0.0.1:{exporters.hosts[0]['port']}"     # an exporter, not a Prometheus
    assert gpudeck("profiles", "add", "wrong", "--prometheus", url).returncode == 0
    out = gpudeck("profiles", "check", "wrong")
    assert out.returncode == 1 and out.stdout.count("\n") == 1
    assert "not a Prometheus API answer" in out.stdout


def test_profiles_check_says_one_line_when_auth_is_refused(tmp_path):
    import warnings
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        import crypt
    hashed = crypt.crypt("right-password", crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=1 << 4))
    prom = Prometheus(tmp_path / "prom", [], web_config=f"basic_auth_users:\n  ops: {hashed}\n").start()
    try:
        assert gpudeck("profiles", "add", "locked", "--prometheus", prom.url, "--basic-user", "ops",
                       "--basic-password-env", "PROM_PW").returncode == 0
        bad = gpudeck("profiles", "check", "locked", env={"PROM_PW": "wrong-password"})
        assert bad.returncode == 1 and bad.stdout.count("\n") == 1
        assert "authentication refused (HTTP 401)" in bad.stdout
        good = gpudeck("profiles", "check", "locked", env={"PROM_PW": "right-password"})
        assert good.returncode == 0, good.stdout + good.stderr
        shown = gpudeck("profiles", "show", "locked")
        assert "right-password" not in shown.stdout and "PROM_PW" in shown.stdout
    finally:
        prom.stop()


async def test_fleet_view_sorts_filters_and_drills_into_a_host(fleet):
    from screens.fleet_app import FleetApp, HostGPUs
    from widgets.fleet_hosts import FleetHostsTable
    from widgets.gpu_table import GPUTable

    exporters, prom = fleet
    exporters.post(0, "/sim/xid?gpu=1&code=79")
    app = FleetApp(PrometheusFleet(PromSettings(url=prom.url), simulated=True), "test-fleet", interval_s=0.3)
    async with app.run_test(size=(160, 45)) as pilot:
        table = app.query_one(FleetHostsTable)

        async def until(predicate, timeout=20.0):
            deadline = time.monotonic() + timeout
            while not predicate() and time.monotonic() < deadline:
                await pilot.pause(0.1)
            assert predicate()

        await until(lambda: app.latest is not None and any(
            h.host == host_name(0) and any(f.startswith("xid") for g in h.gpus for f in g.flags)
            for h in app.latest.hosts))
        await until(lambda: len(table.hosts) >= 2)
        assert table.hosts[0] == host_name(0) or "unreachable" in [r.worst for r in app.visible_rows()][:1]
        await pilot.press("x")
        await until(lambda: table.hosts == [host_name(0)])
        await pilot.press("x", "slash", *"node-01", "enter")
        await until(lambda: table.hosts == [host_name(1)])
        await pilot.press("escape")
        await until(lambda: len(table.hosts) >= 2)
        table.go_to(table.hosts.index(host_name(1)))
        await pilot.press("enter")
        await until(lambda: isinstance(app.screen, HostGPUs))
        gpus = app.screen.query_one(GPUTable)
        await until(lambda: gpus.row_count == GPUS)
        await pilot.press("escape")
        await until(lambda: not isinstance(app.screen, HostGPUs))


@pytest.mark.slow
@pytest.mark.prometheus  # the engine starts it (console/demo/fleet.py); tests/tiers.py reads only tests
def test_fleet_demo_starts_sixteen_hosts_and_leaves_nothing_behind():
    from console.demo.fleet import CRASHED_HOST, HOSTS as DEMO_HOSTS, XID_HOST, setup

    demo = setup()
    try:
        sample = sample_until(demo.settings.url, lambda s: len(s.hosts) == DEMO_HOSTS and any(
                                  "stale" in g.flags for h in s.hosts for g in h.gpus))
        hosts = by_host(sample)
        assert len(hosts) == DEMO_HOSTS and sample.simulated
        assert all("stale" in g.flags for g in hosts[host_name(CRASHED_HOST)].gpus)
        assert any(f == "xid-79" for g in hosts[host_name(XID_HOST)].gpus for f in g.flags)
    finally:
        demo.close()
    assert not demo.root.exists()
    assert all(p.poll() is not None for p in demo.procs)
