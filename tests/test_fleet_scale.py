"""The Prometheus fleet at a scale where per-series and per-row work shows: right rows, right marks,
and a view that holds only a screenful of rows while its keys move over all of them.

The fleet is the tests' stand-in Prometheus (tests/prom_peer.py) answering with
`big_fleet`, label for label what a real Prometheus returns for DCGM exporters, in the
compact shape Prometheus gives to gpudeck's own query (`compact`).
"""
from __future__ import annotations

import pytest

from console.gpus.fleet_table import SEVERITY, host_lines, sort_rows
from console.gpus.prometheus import PrometheusFleet, PromSettings
from tests.harness import wait_until
from tests.prom_peer import PromPeer, big_fleet, compact, fleet_host, fleet_instance, vector

HOSTS, GPUS = 300, 8
DOWN = {7, 150}
LATE = {11: 90.0}                       # last scraped 90 s ago: past two 15 s intervals
CRASHED = 42                            # every GPU at 100% with nothing in memory: the stale pattern
XID = (99, 3)


def _answer() -> dict:
    crashed = {(CRASHED, g): {"DCGM_FI_DEV_GPU_UTIL": 100, "DCGM_FI_DEV_FB_USED": 0} for g in range(GPUS)}
    return vector(compact(big_fleet(HOSTS, GPUS, down=DOWN, late=LATE,
                                    values={**crashed, XID: {"DCGM_FI_DEV_XID_ERRORS": 79}})))


VIEW_HOSTS = 120    # four screens at 40 lines; every flag shows from the first refresh, so the order holds


@pytest.fixture
def view_peer():
    server = PromPeer()
    server.answers["gpu"] = vector(compact(big_fleet(VIEW_HOSTS, GPUS, down={7},
                                                     values={XID: {"DCGM_FI_DEV_XID_ERRORS": 79}})))
    try:
        yield server
    finally:
        server.close()


@pytest.fixture
def peer():
    server = PromPeer()
    server.answers["gpu"] = _answer()
    try:
        yield server
    finally:
        server.close()


async def _samples(url: str, n: int):
    fleet = PrometheusFleet(PromSettings(url=url, scrape_interval_s=15.0))
    try:
        return [await fleet.sample() for _ in range(n)]
    finally:
        await fleet.close()


async def test_every_host_gets_one_row_with_sums_over_its_gpus(peer):
    sample = (await _samples(peer.url, 1))[0]
    assert sample.error is None and sample.unreadable == 0
    rows = {r.host: r for r in sample.rows}
    assert len(sample.rows) == len(sample.hosts) == HOSTS
    assert [r.host for r in sample.rows] == [h.host for h in sample.hosts]       # one row per snapshot, in order
    up = [h for h in range(HOSTS) if h not in DOWN]
    assert sum(r.gpus or 0 for r in sample.rows) == len(up) * GPUS
    for h in (0, 1, 123, HOSTS - 1):
        row = rows[fleet_host(h)]
        utils = [(h * 7 + g * 13) % 101 for g in range(GPUS)]
        assert row.util_pct == round(sum(utils) / GPUS, 1)
        assert row.memory_used_mib == 15000.0 * GPUS and row.memory_total_mib == (15000 + 80000) * GPUS
        assert row.power_w == pytest.approx(350.5 * GPUS) and row.temp_max_c == 45
        assert row.busy == sum(u >= 20 for u in utils) and row.idle == sum(u < 5 for u in utils)
    host0 = next(h for h in sample.hosts if h.host == fleet_host(0))
    gpu = next(g for g in host0.gpus if g.index == 5)
    assert (gpu.uuid, gpu.name, gpu.bus_id) == ("GPU-00000000-0005-4000-8000-000000000000",
                                                "NVIDIA H100 80GB HBM3", "00000000:1D:00.0")


async def test_down_late_and_xid_hosts_are_marked(peer):
    sample = (await _samples(peer.url, 1))[0]
    rows = {r.host: r for r in sample.rows}
    for h in DOWN:      # no series: named by the instance, unreachable, with when it went down
        row = rows[fleet_instance(h)]
        assert row.state == "unreachable" and row.worst == "unreachable" and row.reachable is False
        assert row.gpus is None and f"exporter {fleet_instance(h)} down since" in row.message
    late = rows[fleet_host(11)]
    assert late.sample_stale and late.worst == "no signal"
    assert late.message.startswith("last scrape 9") and "(scrape interval 15 s)" in late.message
    assert not rows[fleet_host(12)].sample_stale
    xid = rows[fleet_host(XID[0])]
    assert xid.worst == "xid" and xid.xids == [(XID[1], 79)]


async def test_the_stale_pattern_is_flagged_after_three_refreshes_not_one(peer):
    first, _, third = await _samples(peer.url, 3)
    crashed = lambda s: next(r for r in s.rows if r.host == fleet_host(CRASHED))  # noqa: E731
    assert crashed(first).stale == 0 and crashed(first).worst == "busy"
    assert crashed(third).stale == GPUS and crashed(third).worst == "stale"
    assert sum(r.stale for r in third.rows) == GPUS          # no other host caught it
    worst_first = [r.worst for r in sort_rows(list(third.rows), "state")][:4]
    assert worst_first == sorted(worst_first, key=SEVERITY.index)


async def test_the_cli_table_has_a_line_per_host(peer):
    sample = (await _samples(peer.url, 1))[0]
    lines = host_lines(sample)
    assert lines[0].startswith(f"{HOSTS} host(s) · {(HOSTS - len(DOWN)) * GPUS} GPU(s)")
    assert len(lines) == 2 + HOSTS + 1
    assert lines[2].split()[1] == "unreachable"              # worst first


@pytest.mark.slow
async def test_the_view_holds_a_screenful_and_its_keys_page_over_every_host(view_peer):
    from screens.fleet_app import FleetApp, HostGPUs
    from widgets.fleet_hosts import FleetHostsTable

    app = FleetApp(PrometheusFleet(PromSettings(url=view_peer.url)), "big", interval_s=0.5)
    async with app.run_test(size=(160, 40)) as pilot:
        table = app.query_one(FleetHostsTable)
        await wait_until(pilot, lambda: len(table.hosts) == VIEW_HOSTS)
        window = table.window
        assert table.row_count == window < 40            # the table holds the rows on screen, no more
        assert table.selected_host == table.hosts[0]
        title = lambda: str(app.query_one("#fleet-title").render())  # noqa: E731
        assert f"rows 1-{window}" in title()

        async def key(name: str, index: int, top: int | None = None) -> None:
            """Press one key and wait until the cursor is on host `index` (and the window starts at `top`)."""
            await pilot.press(name)
            await wait_until(pilot, lambda: table.selected_host == table.hosts[index]
                             and (top is None or table.top == top), what=f"{name} moving to host {index}")

        await key("pagedown", window, top=window)
        await wait_until(pilot, lambda: f"rows {window + 1}-{2 * window}" in title(), what="the title to follow the page")
        await key("j", window + 1)
        await key("j", window + 2)
        await key("k", window + 1)
        await key("end", VIEW_HOSTS - 1, top=VIEW_HOSTS - window)
        await key("pageup", VIEW_HOSTS - 1 - window)
        await key("home", 0, top=0)
        await key("G", VIEW_HOSTS - 1)
        await key("g", 0)
        await key("space", window)
        await key("down", window + 1)

        chosen = table.selected_host                     # re-sorting keeps the host selected
        order = list(table.hosts)
        await pilot.press("o")
        await wait_until(pilot, lambda: table.hosts != order, what="o re-sorting the hosts")
        assert table.selected_host == chosen and table.row_count == window
        assert table.hosts.index(chosen) - table.top == table.cursor_row

        await pilot.press("enter")                       # Enter drills into the host under the cursor
        await wait_until(pilot, lambda: isinstance(app.screen, HostGPUs))
        assert app.screen.host == chosen


async def test_off_screen_hosts_keep_their_cells_current(view_peer):
    from screens.fleet_app import FleetApp
    from widgets.fleet_hosts import FleetHostsTable

    app = FleetApp(PrometheusFleet(PromSettings(url=view_peer.url)), "big", interval_s=0.5)
    async with app.run_test(size=(160, 30)) as pilot:
        table = app.query_one(FleetHostsTable)
        await wait_until(pilot, lambda: len(table.hosts) == VIEW_HOSTS)
        await pilot.press("o")                           # by host name: the XID host is far down the list
        await wait_until(pilot, lambda: table.hosts.index(fleet_host(XID[0])) >= table.window)
        host = fleet_host(XID[0])
        assert host not in [key.value for key in table.rows] and "XID 79 on GPU 3" in table.cell_text(host, "notes")
        table.go_to(table.hosts.index(host))
        await wait_until(pilot, lambda: table.selected_host == host, what="the cursor on the XID host")
        assert "XID 79 on GPU 3" in str(table.get_cell(host, "notes"))


def test_the_collector_is_paused_while_reading_and_resumed_once_after():
    import gc

    from console.gc_pause import collector_paused

    assert gc.isenabled()
    with collector_paused():
        with collector_paused():             # a second reader on another thread
            assert not gc.isenabled()
        assert not gc.isenabled()            # the first is still reading
    assert gc.isenabled()
    gc.disable()
    try:
        with collector_paused():
            pass
        assert not gc.isenabled()            # whoever had turned it off keeps it off
    finally:
        gc.enable()


async def test_reading_that_takes_over_a_quarter_of_the_interval_spaces_out_the_next(peer):
    from console.gpus import prometheus

    fleet = PrometheusFleet(PromSettings(url=peer.url))
    samples = fleet.samples(0.01)
    try:
        await anext(samples)                                       # 300 hosts: read on the worker thread
        cost = fleet.client.worker_busy_s
        assert cost > 0 and fleet.pace_s == pytest.approx(max(0.01, cost / prometheus.PACE_SHARE))
        assert fleet.late_by(0.01) is None                         # a spaced-out refresh is not a late one
    finally:
        await samples.aclose()
        await fleet.close()


async def test_a_cheap_refresh_keeps_the_interval_asked_for(view_peer):
    fleet = PrometheusFleet(PromSettings(url=view_peer.url))
    samples = fleet.samples(5.0)
    try:
        await anext(samples)
        assert fleet.pace_s == 5.0
    finally:
        await samples.aclose()
        await fleet.close()
