"""The fleet's compact DCGM query, asked of a real Prometheus, reads to exactly what the plain one does.

gpudeck asks for one identity row per GPU and short value rows
(console/gpus/fleet_query.py) instead of every label on every series. Both
queries are asked of one Prometheus at one evaluation time, over simulated
exporters plus a page with the shapes the simulator lacks (MIG instances with
no whole-GPU row, Kubernetes pod labels, a field missing); every host and GPU
must come out the same, attribute for attribute, whether GPUs are keyed the short
way (exporter, index, MIG instance) or the long, old way (every label that tells
GPUs apart). Labels that join to one key (a `|` inside them) must not lend one
GPU's numbers to another, and two hosts behind one exporter (which share a short
key) make the reader key the long way from then on. Identities are
asked only now and then: a refresh between reads value rows alone, yet sees a
GPU added (asking its identity at once) or removed, and a label changed under
the same key within `IDENTITY_EVERY_S`.
"""
from __future__ import annotations

import threading
import time
from dataclasses import astuple
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from console.gpus.dcgm import SERIES_NAMES, fold
from console.gpus.fleet_query import IDENTITY_EVERY_S, TS_LABEL, FleetReader, gpu_query
from console.gpus.model import NA
from console.gpus.prometheus import PrometheusFleet, PromSettings
from tests.prometheus_part import Prometheus, SimExporters

PLAIN = ('{__name__=~"' + "|".join(SERIES_NAMES) + '|up"} or label_replace(timestamp({__name__="up"}), "'
         + TS_LABEL + '", "1", "", "")')

MIG = 'gpu="0",UUID="GPU-mig-0",device="nvidia0",modelName="NVIDIA A100-SXM4-80GB",Hostname="mig-node"'
POD = ('gpu="1",UUID="GPU-k8s-1",device="nvidia1",modelName="NVIDIA H100 80GB HBM3",Hostname="k8s-node",'
       'pci_bus_id="00000000:19:00.0",pod="infer-0",namespace="llm",container="vllm"')
# These two join to the same key: instance|Hostname|gpu|device|UUID|GPU_I_ID.
CLASH_A = 'Hostname="clash|0",device="x",UUID="U"'
CLASH_B = 'Hostname="clash",gpu="0|",device="x",UUID="U"'
PAGE = "\n".join([
    f'DCGM_FI_DEV_FB_USED{{{MIG},GPU_I_ID="1",GPU_I_PROFILE="3g.40gb"}} 1000',
    f'DCGM_FI_DEV_FB_FREE{{{MIG},GPU_I_ID="1",GPU_I_PROFILE="3g.40gb"}} 39000',
    f'DCGM_FI_DEV_FB_USED{{{MIG},GPU_I_ID="2",GPU_I_PROFILE="4g.40gb"}} 2000',
    f'DCGM_FI_DEV_FB_FREE{{{MIG},GPU_I_ID="2",GPU_I_PROFILE="4g.40gb"}} 38000',
    f'DCGM_FI_DEV_GPU_TEMP{{{MIG},GPU_I_ID="1",GPU_I_PROFILE="3g.40gb"}} 51',
    f'DCGM_FI_DEV_GPU_TEMP{{{MIG},GPU_I_ID="2",GPU_I_PROFILE="4g.40gb"}} 51',
    f'DCGM_FI_DEV_GPU_UTIL{{{POD}}} 77',
    f'DCGM_FI_DEV_FB_USED{{{POD}}} 60000',
    f'DCGM_FI_DEV_FB_FREE{{{POD}}} 20000',                  # no temperature: it must stay unknown
    f'DCGM_FI_DEV_GPU_UTIL{{{CLASH_A}}} 11',
    f'DCGM_FI_DEV_GPU_UTIL{{{CLASH_B}}} 99',
]) + "\n"
EXTRA: list[str] = []     # lines a test adds to the page for a while (a GPU that comes and goes)


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = (PAGE + "".join(EXTRA)).encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


def read_answer(data, now: float, host_of_instance: dict[str, str]):
    """One answer with identities (gpu_query's), read on its own."""
    read = FleetReader().read(data, now, host_of_instance)
    assert read is not None      # an answer read as one with identities is always read
    return read


@pytest.fixture(scope="module")
def prom(tmp_path_factory):
    base = tmp_path_factory.mktemp("compact")
    page = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    threading.Thread(target=page.serve_forever, daemon=True).start()
    exporters = SimExporters.start(base / "state", 2, 2)
    server = Prometheus(base / "prom", [*exporters.targets, f"127.0.0.1:{page.server_address[1]}"]).start()
    try:
        server.wait_up(3)
        yield server
    finally:
        server.stop()
        exporters.stop()
        page.shutdown()
        page.server_close()


def _read(url: str, expr: str, at: float, reader: FleetReader | None = None):
    doc = httpx.get(url + "/api/v1/query", params={"query": expr, "time": at}, timeout=10).json()
    assert doc["status"] == "success", doc
    hosts: dict[str, str] = {}
    read = read_answer(doc["data"], at, hosts) if reader is None else reader.read(doc["data"], at, hosts)
    return fold(read.series, gpus=read.gpus, taken_at=at), read, hosts, read.unreadable


EXPECTED = {"mig-node", "k8s-node", "clash", "clash|0", "sim-node-00", "sim-node-01"}


def _both(url: str, short: bool = True):
    """Both answers at one moment, once every exporter's page is in Prometheus (polled, not slept on)."""
    deadline = time.monotonic() + 30
    while True:
        at = time.time() - 1.0
        plain = _read(url, PLAIN, at)
        if EXPECTED <= set(plain[0]) or time.monotonic() > deadline:
            return plain, _read(url, gpu_query("", short=short), at)
        time.sleep(0.2)


@pytest.mark.parametrize("short", [True, False], ids=["short key", "long key"])
def test_the_compact_answer_reads_to_the_same_hosts_gpus_and_targets(prom, short):
    (plain, plain_read, plain_hosts, _), (compact, compact_read, compact_hosts, bad) = _both(prom.url, short)
    clash = set() if short else {"clash", "clash|0"}     # the pair that joins to one long key (below)
    assert {"mig-node", "k8s-node", "sim-node-00", "sim-node-01"} <= set(compact)
    for host in set(plain) - clash:
        assert repr(compact[host]) == repr(plain[host]), host
    assert set(compact) == set(plain)
    assert compact_read.ups == plain_read.ups and compact_read.scraped == plain_read.scraped
    assert compact_hosts.keys() == plain_hosts.keys()
    assert bad == (0 if short else 1)       # the long key's clashing pair's one value row, nothing else

    mig = compact["mig-node"].gpus[0]
    assert mig.memory_used_mib == 3000 and mig.temperature_c == 51 and mig.util_gpu_pct is NA
    assert [m.profile for m in mig.mig_devices] == ["3g.40gb", "4g.40gb"]
    pod = compact["k8s-node"].gpus[0]
    assert pod.workloads == ["llm/infer-0"] and pod.util_gpu_pct == 77 and pod.temperature_c is NA


def test_labels_that_join_to_one_key_lend_no_numbers_and_are_counted(prom):
    (plain, *_), (compact, compact_read, _, _) = _both(prom.url, short=False)
    assert [g.util_gpu_pct for g in plain["clash"].gpus] == [99]          # the plain answer tells them apart
    assert [g.util_gpu_pct for g in plain["clash|0"].gpus] == [11]
    for host in ("clash", "clash|0"):                                      # the long key cannot: unknown
        assert [g.util_gpu_pct for g in compact[host].gpus] == [NA], host
    assert compact_read.unreadable >= 1
    (_, (short, *_)) = _both(prom.url, short=True)                         # the short key has no `|` to clash on
    assert [g.util_gpu_pct for g in short["clash"].gpus] == [99]
    assert [g.util_gpu_pct for g in short["clash|0"].gpus] == [11]


def test_a_value_only_answer_reads_to_what_the_whole_one_did(prom):
    (plain, *_), _ = _both(prom.url)
    at = time.time() - 1.0
    reader = FleetReader()
    assert "count by" in reader.query("") and reader.asks_identities
    whole, whole_read, *_ = _read(prom.url, reader.query(""), at, reader)
    expr = reader.query("")
    assert "count by" not in expr and not reader.asks_identities
    values, values_read, *_ = _read(prom.url, expr, at, reader)
    assert set(values) == set(whole) == set(plain)
    for host in whole:            # MIG, pods, a field missing, the clash: the same, number for number
        assert repr(values[host]) == repr(whole[host]), host
    assert values_read.unreadable == whole_read.unreadable == 0
    assert values_read.ups == whole_read.ups and values_read.scraped == whole_read.scraped


LATE = 'Hostname="late-node",gpu="0",UUID="GPU-late-0",device="nvidia0",modelName="NVIDIA L40S",namespace="llm"'


def _page_holds(url: str, expr: str, count: int) -> None:
    """Until Prometheus answers `expr` with `count` series (it scrapes every second)."""
    deadline = time.monotonic() + 30
    while True:
        doc = httpx.get(url + "/api/v1/query", params={"query": expr}, timeout=10).json()
        if len(doc["data"]["result"]) == count:
            return
        assert time.monotonic() < deadline, f"Prometheus never held {count} of {expr}"
        time.sleep(0.2)


def _gpus(sample) -> dict:
    return {(h.host, g.uuid): g for h in sample.hosts for g in h.gpus}


async def test_later_refreshes_ask_values_only_yet_see_gpus_come_and_go(prom):
    asked: list[bool] = []      # per DCGM query sent: whether it asked for identities

    class Recording(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request):
            expr = request.url.params.get("query", "")
            if TS_LABEL in expr:
                asked.append("count by" in expr)
            return await super().handle_async_request(request)

    clock = [0.0]
    fleet = PrometheusFleet(PromSettings(url=prom.url), transport=Recording())
    fleet._reader = FleetReader(clock=lambda: clock[0])

    async def sample(asks: list[bool]) -> dict:
        asked.clear()
        taken = await fleet.sample()
        assert taken.error is None and asked == asks
        return _gpus(taken)

    try:
        first = await sample([True])
        second = await sample([False])
        assert {k: astuple(g)[:4] for k, g in second.items()} == {k: astuple(g)[:4] for k, g in first.items()}
        assert {"clash", "clash|0"} <= {host for host, _ in second}

        EXTRA[:] = [f'DCGM_FI_DEV_GPU_UTIL{{{LATE},pod="job-a"}} 42\n']
        _page_holds(prom.url, 'DCGM_FI_DEV_GPU_UTIL{Hostname="late-node"}', 1)
        added = await sample([False, True])       # a key never seen: its identity asked at once
        late = added[("late-node", "GPU-late-0")]
        assert late.util_gpu_pct == 42 and late.name == "NVIDIA L40S" and late.workloads == ["llm/job-a"]
        assert set(added) == set(first) | {("late-node", "GPU-late-0")}

        EXTRA[:] = [f'DCGM_FI_DEV_GPU_UTIL{{{LATE},pod="job-b"}} 43\n']     # same key, another pod
        _page_holds(prom.url, 'DCGM_FI_DEV_GPU_UTIL{Hostname="late-node",pod="job-b"}', 1)
        _page_holds(prom.url, 'DCGM_FI_DEV_GPU_UTIL{Hostname="late-node"}', 1)
        moved = (await sample([False]))[("late-node", "GPU-late-0")]
        assert moved.util_gpu_pct == 43 and moved.workloads == ["llm/job-a"]    # numbers now, labels lag
        clock[0] += IDENTITY_EVERY_S
        moved = (await sample([True]))[("late-node", "GPU-late-0")]
        assert moved.util_gpu_pct == 43 and moved.workloads == ["llm/job-b"]    # ...for IDENTITY_EVERY_S at most

        EXTRA.clear()
        _page_holds(prom.url, 'DCGM_FI_DEV_GPU_UTIL{Hostname="late-node"}', 0)
        removed = await sample([False])
        assert set(removed) == set(first)
    finally:
        EXTRA.clear()
        await fleet.close()


FED = 'gpu="5",device="nvidia5",modelName="NVIDIA H100 80GB HBM3"'     # two hosts behind one exporter


async def test_hosts_that_share_a_short_key_are_read_the_long_way(prom):
    asked: list[tuple[bool, bool]] = []      # per DCGM query sent: (asks identities, keys the long way)

    class Recording(httpx.AsyncHTTPTransport):
        async def handle_async_request(self, request):
            expr = request.url.params.get("query", "")
            if TS_LABEL in expr:
                asked.append(("count by" in expr, '"UUID"' in expr))
            return await super().handle_async_request(request)

    fleet = PrometheusFleet(PromSettings(url=prom.url), transport=Recording())
    try:
        EXTRA[:] = [f'DCGM_FI_DEV_GPU_UTIL{{{FED},Hostname="fed-a",UUID="GPU-fed-a"}} 21\n',
                    f'DCGM_FI_DEV_GPU_UTIL{{{FED},Hostname="fed-b",UUID="GPU-fed-b"}} 22\n']
        _page_holds(prom.url, 'DCGM_FI_DEV_GPU_UTIL{gpu="5"}', 2)
        taken = await fleet.sample()
        assert taken.error is None and asked == [(True, False), (True, True)]   # short, a clash: asked the long way
        gpus = _gpus(taken)
        assert gpus[("fed-a", "GPU-fed-a")].util_gpu_pct == 21 and gpus[("fed-b", "GPU-fed-b")].util_gpu_pct == 22
        asked.clear()
        again = await fleet.sample()
        assert again.error is None and asked == [(False, True)]                 # and the long way from then on
        assert _gpus(again)[("fed-b", "GPU-fed-b")].util_gpu_pct == 22
    finally:
        EXTRA.clear()
        await fleet.close()
