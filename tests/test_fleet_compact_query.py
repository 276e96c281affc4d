"""The fleet's compact DCGM query, asked of a real Prometheus, reads to exactly what the plain one does.

gpudeck asks for one identity row per GPU and short value rows
(console/gpus/fleet_query.py) instead of every label on every series. Both
queries are asked of one Prometheus at one evaluation time, over simulated
exporters plus a page with the shapes the simulator lacks (MIG instances with
no whole-GPU row, Kubernetes pod labels, a field missing); every host and GPU
must come out the same, attribute for attribute. Labels that join to one key
(a `|` inside them) must not lend one GPU's numbers to another.
"""
from __future__ import annotations

import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx
import pytest

from console.gpus.dcgm import SERIES_NAMES, fold
from console.gpus.fleet_query import TS_LABEL, gpu_query, read_answer
from console.gpus.model import NA
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


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the stdlib's name
        body = PAGE.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/plain; version=0.0.4")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args) -> None:
        pass


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


def _read(url: str, expr: str, at: float):
    doc = httpx.get(url + "/api/v1/query", params={"query": expr, "time": at}, timeout=10).json()
    assert doc["status"] == "success", doc
    hosts: dict[str, str] = {}
    read = read_answer(doc["data"], at, hosts)
    return fold(read.series, gpus=read.gpus, taken_at=at), read, hosts, read.unreadable


EXPECTED = {"mig-node", "k8s-node", "clash", "clash|0", "sim-node-00", "sim-node-01"}


def _both(url: str):
    """Both answers at one moment, once every exporter's page is in Prometheus (polled, not slept on)."""
    deadline = time.monotonic() + 30
    while True:
        at = time.time() - 1.0
        plain = _read(url, PLAIN, at)
        if EXPECTED <= set(plain[0]) or time.monotonic() > deadline:
            return plain, _read(url, gpu_query(""), at)
        time.sleep(0.2)


def test_the_compact_answer_reads_to_the_same_hosts_gpus_and_targets(prom):
    (plain, plain_read, plain_hosts, _), (compact, compact_read, compact_hosts, bad) = _both(prom.url)
    clash = {"clash", "clash|0"}
    assert {"mig-node", "k8s-node", "sim-node-00", "sim-node-01"} <= set(compact)
    for host in set(plain) - clash:
        assert repr(compact[host]) == repr(plain[host]), host
    assert set(compact) == set(plain)
    assert compact_read.ups == plain_read.ups and compact_read.scraped == plain_read.scraped
    assert compact_hosts.keys() == plain_hosts.keys()
    assert bad == 1         # the clashing pair's one value row (below), nothing else

    mig = compact["mig-node"].gpus[0]
    assert mig.memory_used_mib == 3000 and mig.temperature_c == 51 and mig.util_gpu_pct is NA
    assert [m.profile for m in mig.mig_devices] == ["3g.40gb", "4g.40gb"]
    pod = compact["k8s-node"].gpus[0]
    assert pod.workloads == ["llm/infer-0"] and pod.util_gpu_pct == 77 and pod.temperature_c is NA


def test_labels_that_join_to_one_key_lend_no_numbers_and_are_counted(prom):
    (plain, *_), (compact, compact_read, _, _) = _both(prom.url)
    assert [g.util_gpu_pct for g in plain["clash"].gpus] == [99]          # the plain answer tells them apart
    assert [g.util_gpu_pct for g in plain["clash|0"].gpus] == [11]
    for host in ("clash", "clash|0"):                                      # the compact one cannot: unknown
        assert [g.util_gpu_pct for g in compact[host].gpus] == [NA], host
    assert compact_read.unreadable >= 1
