"""Prometheus answers are hostile input (issue 23, items 7, 8, 9 and the value ranges).

The peer is tests/prom_peer.py, a real HTTP server on a real socket that
answers what each test sets: malformed series, a body that trickles one byte
at a time, an answer far larger than a fleet's. A bad series is skipped and
counted, a slow answer ends at the request's overall deadline, a huge one is
refused after the cap, and the fleet view says STALE from the moment a
refresh is late.
"""
from __future__ import annotations

import asyncio
import json
import time

import pytest

from console.gpus.model import NA
from console.gpus.prometheus import PrometheusFleet, PromSettings
from tests.cli import gpudeck
from tests.harness import wait_until
from tests.prom_peer import PromPeer, healthy_fleet, scraped, series, up, vector

# The shapes the issue found, each one series in an otherwise healthy answer.
MALFORMED = {
    "result without value": {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": "node-b"}},
    "list-valued labels": {"metric": {"__name__": "DCGM_FI_DEV_GPU_UTIL", "Hostname": ["node-b", "x"]},
                           "value": [1.0, "3"]},
    "labels not a mapping": {"metric": ["__name__", "up"], "value": [1.0, "1"]},
    "value of one element": {"metric": {"__name__": "up", "instance": "x"}, "value": [1.0]},
    "value an object": {"metric": {"__name__": "up", "instance": "x"}, "value": [1.0, {"v": 1}]},
    "time not a number": {"metric": {"__name__": "up", "instance": "x"}, "value": ["soon", "1"]},
    "a bare string": "DCGM_FI_DEV_GPU_UTIL 5",
    "null": None,
}


@pytest.fixture
def peer():
    server = PromPeer()
    try:
        yield server
    finally:
        server.close()


def sample_of(settings: PromSettings, limit_s: float = 60.0):
    """One fleet sample, bounded: a hang is a failure with a message, not a stuck test run."""
    async def go():
        fleet = PrometheusFleet(settings)
        try:
            return await asyncio.wait_for(fleet.sample(), limit_s)
        finally:
            await fleet.close()
    return asyncio.run(go())


def add_profile(name: str, url: str, *flags: str) -> None:
    out = gpudeck("profiles", "add", name, "--prometheus", url, *flags)
    assert out.returncode == 0, out.stdout + out.stderr


# ---- item 7: malformed answers --------------------------------------------------------------------

@pytest.mark.parametrize("shape", sorted(MALFORMED))
def test_a_malformed_series_is_skipped_and_counted(peer, shape):
    peer.answers["gpu"] = vector(healthy_fleet() + [MALFORMED[shape]])
    sample = sample_of(PromSettings(url=peer.url))
    assert sample.error is None
    assert [h.host for h in sample.hosts] == ["node-a"] and sample.hosts[0].gpus[0].util_gpu_pct == 55
    assert sample.unreadable == 1 and sample.unreadable_line.startswith("1 series unreadable")


def test_targets_whose_labels_are_not_a_mapping_cost_nothing(peer):
    peer.answers["/api/v1/targets"] = {"status": "success", "data": {"activeTargets": [
        {"labels": "instance=x", "scrapeInterval": "1s"}, {"labels": {"instance": 3}, "scrapeInterval": 5},
        {"labels": {"instance": "10.0.0.1:9400"}, "scrapeInterval": "9" * 400 + "s"}, 7]}}
    sample = sample_of(PromSettings(url=peer.url))
    assert sample.error is None and sample.hosts[0].gpus
    assert sample.unreadable == 3


def test_a_deeply_nested_answer_is_not_a_prometheus_answer(peer):
    peer.answers["gpu"] = b"[" * 100_000
    sample = sample_of(PromSettings(url=peer.url))
    assert "not a Prometheus API answer" in sample.error


def test_malformed_server_series_are_counted_too(peer):
    peer.answers["server"] = vector([
        {"metric": {"__name__": "vllm:num_requests_running", "instance": "s:8000", "model_name": ["m"]},
         "value": [1.0, "3"]},
        {"metric": {"__name__": "vllm:num_requests_running", "instance": "s:8000", "model_name": "m"},
         "value": [1.0, "4"]}])
    sample = sample_of(PromSettings(url=peer.url))
    assert [(s.instance, s.running) for s in sample.servers] == [("s:8000", 4.0)]
    assert sample.unreadable == 1


def test_the_cli_says_how_many_series_were_unreadable(peer):
    peer.answers["gpu"] = vector(healthy_fleet() + [MALFORMED["result without value"],
                                                    MALFORMED["list-valued labels"],
                                                    MALFORMED["labels not a mapping"]])
    add_profile("broken", peer.url)
    out = gpudeck("gpus", "-p", "broken")
    assert out.returncode == 0, out.stdout + out.stderr
    assert "3 series unreadable" in out.stdout and "internal error" not in out.stderr
    assert "node-a" in out.stdout
    doc = json.loads(gpudeck("gpus", "-p", "broken", "--json").stdout)
    assert doc["unreadable_series"] == 3 and doc["hosts"][0]["host"] == "node-a"
    check = gpudeck("profiles", "check", "broken")
    assert check.returncode == 0 and "3 series unreadable" in check.stdout, check.stdout + check.stderr


async def test_the_fleet_view_shows_the_unreadable_count_and_survives(peer):
    from screens.fleet_app import FleetApp
    from widgets.fleet_hosts import FleetHostsTable

    peer.answers["gpu"] = vector(healthy_fleet() + list(MALFORMED.values()))
    app = FleetApp(PrometheusFleet(PromSettings(url=peer.url)), "broken", interval_s=0.3)
    async with app.run_test(size=(160, 45)) as pilot:
        title = lambda: str(app.query_one("#fleet-title").render())  # noqa: E731
        await wait_until(pilot, lambda: app.query_one(FleetHostsTable).hosts == ["node-a"]
                         and "series unreadable" in title(), what="the one readable host and the count")
        assert f"{len(MALFORMED)} series unreadable" in title()
        assert app.is_running


# ---- value ranges ---------------------------------------------------------------------------------

def test_values_outside_a_metrics_physical_range_read_na(peer):
    peer.answers["gpu"] = vector([series("DCGM_FI_DEV_GPU_UTIL", -1), series("DCGM_FI_DEV_GPU_TEMP", 1e308),
                                  series("DCGM_FI_DEV_POWER_USAGE", -1), series("DCGM_FI_DEV_FB_USED", 1e308),
                                  series("DCGM_FI_DEV_SM_CLOCK", 1410), up(), scraped()])
    peer.answers["server"] = vector([
        {"metric": {"__name__": "vllm:kv_cache_usage_perc", "instance": "s:8000"}, "value": [1.0, "-1"]},
        {"metric": {"__name__": "vllm:num_requests_running", "instance": "s:8000"}, "value": [1.0, "1e308"]}])
    sample = sample_of(PromSettings(url=peer.url))
    gpu = sample.hosts[0].gpus[0]
    assert gpu.util_gpu_pct is NA and gpu.temperature_c is NA and gpu.power_draw_w is NA
    assert gpu.memory_used_mib is NA and gpu.sm_clock_mhz == 1410
    server = sample.servers[0]
    assert server.kv_cache is None and server.running is None
    from console.gpus.fleet_table import host_lines

    text = "\n".join(host_lines(sample))
    assert "-1%" not in text and "1e+308" not in text and "0" * 30 not in text


def test_the_bench_server_view_reads_impossible_values_as_unknown():
    from console.bench.prom import parse_metrics, server_view

    page = ("vllm:num_requests_running 1e308\nvllm:num_requests_waiting -1\n"
            "vllm:kv_cache_usage_perc 7\nvllm:generation_tokens_total 100\n")
    view = server_view(None, parse_metrics(page, at=0.0))
    assert view == {"gen_tps": None, "running": None, "queued": None, "kv_cache": None}


# ---- item 8: a trickling Prometheus ---------------------------------------------------------------

def test_a_trickling_answer_ends_at_the_overall_deadline(peer):
    peer.trickle_s = 1.0       # under the 2 s per-read timeout: only an overall deadline ends it
    sample = sample_of(PromSettings(url=peer.url, timeout_s=2.0))
    assert sample.error is not None and "no whole answer within 2 s" in sample.error


@pytest.mark.slow
def test_the_cli_and_profiles_check_end_on_a_trickling_prometheus(peer):
    peer.trickle_s = 1.0
    add_profile("slow", peer.url, "--prom-timeout", "2")
    for argv in (("gpus", "-p", "slow"), ("profiles", "check", "slow")):
        out = gpudeck(*argv, timeout=90)
        assert out.returncode == 1, out.stdout + out.stderr
        assert "no whole answer within 2 s" in out.stdout + out.stderr
        assert "Traceback" not in out.stderr


async def test_the_fleet_view_says_stale_as_soon_as_a_refresh_is_late(peer):
    from screens.fleet_app import FleetApp
    from widgets.fleet_hosts import FleetHostsTable

    app = FleetApp(PrometheusFleet(PromSettings(url=peer.url, timeout_s=60.0)), "slow", interval_s=0.3)
    async with app.run_test(size=(160, 45)) as pilot:
        table = app.query_one(FleetHostsTable)

        async def until(predicate, limit=30.0):
            deadline = time.monotonic() + limit
            while not predicate() and time.monotonic() < deadline:
                await pilot.pause(0.1)
            assert predicate()

        title = lambda: str(app.query_one("#fleet-title").render())  # noqa: E731
        await until(lambda: table.hosts == ["node-a"] and "refreshed" in title()
                    and "live" in str(table.get_cell("node-a", "age")))
        peer.asked.clear()
        peer.trickle_s = 1.0    # every later refresh hangs (60 s deadline): the data ages
        await until(lambda: "refresh overdue" in title())
        assert app.fleet.asking_since is not None, "the late refresh is still under way"
        await until(lambda: "live" not in str(table.get_cell("node-a", "age")))
        assert "refreshed" not in title()


# ---- item 9: the size cap -------------------------------------------------------------------------

def _big_answer(megabytes: float) -> bytes:
    filler = series("DCGM_FI_DEV_GPU_UTIL", 1, host="filler", pad="x" * 4000)
    count = int(megabytes * (1 << 20) / len(json.dumps(filler))) + 1
    return json.dumps(vector(healthy_fleet() + [filler] * count)).encode()


@pytest.mark.parametrize("chunked", [False, True], ids=["content-length", "chunked"])
def test_an_answer_over_the_cap_is_refused_with_one_line(peer, chunked):
    peer.answers["gpu"] = _big_answer(3)
    peer.chunked = chunked
    sample = sample_of(PromSettings(url=peer.url, max_answer_bytes=1 << 20))
    assert sample.error is not None and "answer larger than 1 MB, refused" in sample.error
    assert "\n" not in sample.error
    under = sample_of(PromSettings(url=peer.url, max_answer_bytes=8 << 20))
    assert under.error is None and "filler" in [h.host for h in under.hosts]


def test_the_cap_is_set_in_the_profile(peer):
    peer.answers["gpu"] = _big_answer(2)
    peer.chunked = True
    add_profile("big", peer.url, "--max-answer-mb", "1")
    out = gpudeck("gpus", "-p", "big")
    assert out.returncode == 1 and "answer larger than 1 MB, refused" in out.stdout + out.stderr
    assert (out.stdout + out.stderr).count("\n") <= 2 and "Traceback" not in out.stderr
