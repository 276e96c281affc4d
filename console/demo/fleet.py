"""`gpudeck demo --fleet`: 16 simulated hosts behind a real Prometheus (SIMULATED).

Starts `gpudeck sim dcgm` (one exporter per simulated host), two simulated
sglang servers whose GPU state drives the first two hosts, and a real
Prometheus scraping all of it every second. One host shows the stale picture
a crash leaves, one GPU reports XID 79. Everything lives in a temp dir that
`close()` removes, with every process it started.
"""
from __future__ import annotations

import json
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx

from ..free_port import free_port
from ..gpus.prometheus import PromSettings
from ..sim.dcgm import host_dir
from ..sim.hardware import find_gpu
from ..sim.state import gpu_rows, write_state

HOSTS, GPUS = 16, 8
GPU = "RTX PRO 6000 Blackwell"
CRASHED_HOST, XID_HOST, XID_GPU = 5, 9, 3


class FleetDemoError(Exception):
    """The demo cannot start; the message says what to install or why."""


def prometheus_binary() -> str:
    path = shutil.which("prometheus")
    if not path:
        raise FleetDemoError("gpudeck demo --fleet needs a Prometheus server: install one with "
                             "`apt-get install prometheus` (or put a `prometheus` binary on PATH)")
    return path


@dataclass
class FleetDemo:
    root: Path
    settings: PromSettings
    procs: list[subprocess.Popen] = field(default_factory=list)
    keep: bool = False

    def close(self) -> None:
        for proc in reversed(self.procs):
            if proc.poll() is None:
                proc.terminate()
        for proc in self.procs:
            try:
                proc.wait(5)
            except subprocess.TimeoutExpired:
                proc.kill()
        if not self.keep:
            shutil.rmtree(self.root, ignore_errors=True)


def _start(argv: list[str], log: Path) -> subprocess.Popen:
    return subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=open(log, "ab"),
                            text=True, start_new_session=True)


def setup(keep: Path | None = None, wait_s: float = 30.0) -> FleetDemo:
    """Start exporters, servers and Prometheus; return once Prometheus has scraped every exporter."""
    binary = prometheus_binary()
    root = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="gpudeck-fleet-demo-"))
    root.mkdir(parents=True, exist_ok=True)
    state = root / "state"
    demo = FleetDemo(root, PromSettings(url=""), keep=keep is not None)
    try:
        exporters = _start([sys.executable, "-m", "console", "sim", "dcgm", "--hosts", str(HOSTS),
                            "--gpus-per-host", str(GPUS), "--gpu", GPU, "--state-dir", str(state),
                            "--xid", f"{XID_HOST}:{XID_GPU}:79"], root / "dcgm.log")
        demo.procs.append(exporters)
        line = exporters.stdout.readline()
        if not line:
            raise FleetDemoError(f"the simulated exporters did not start (see {root / 'dcgm.log'})")
        targets = [f"127.0.0.1:{e['port']}" for e in json.loads(line)["exporters"]]
        crashed = gpu_rows(find_gpu(GPU), GPUS)
        for row in crashed:
            row.update(memory_used_mib=3, utilization_gpu=100)
        write_state(host_dir(state, CRASHED_HOST), {"pid": None, "status": "crashed",
                                                    "crash_kind": "illegal-address", "gpus": crashed,
                                                    "processes": []})
        servers = []
        for i in range(2):
            port = free_port()
            demo.procs.append(_start([sys.executable, "-m", "console", "sim", "serve", "--port", str(port),
                                      "--gpu", GPU, "--count", str(GPUS), "--startup-s", "1",
                                      "--state-dir", str(host_dir(state, i)), "--log", str(root / f"server{i}.log")],
                                     root / f"server{i}.err"))
            servers.append(f"127.0.0.1:{port}")
        prom_port = free_port()
        (root / "prometheus.yml").write_text(
            "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\nscrape_configs:\n"
            f"  - job_name: dcgm\n    static_configs:\n      - targets: {json.dumps(targets)}\n"
            f"  - job_name: sglang\n    static_configs:\n      - targets: {json.dumps(servers)}\n")
        demo.procs.append(_start([binary, f"--config.file={root / 'prometheus.yml'}",
                                  f"--storage.tsdb.path={root / 'tsdb'}",
                                  f"--web.listen-address=127.0.0.1:{prom_port}"], root / "prometheus.log"))
        demo.settings = PromSettings(url=f"http://127.0.0.1:{prom_port}", scrape_interval_s=1.0)
        _wait_scraped(demo.settings.url, len(targets), wait_s, root)
        return demo
    except BaseException:
        demo.close()
        raise


def _wait_scraped(url: str, count: int, wait_s: float, root: Path) -> None:
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        try:
            doc = httpx.get(url + "/api/v1/query", params={"query": 'count(up{job="dcgm"} == 1)'}, timeout=2).json()
            result = doc["data"]["result"]
            if result and int(float(result[0]["value"][1])) >= count:
                return
        except (httpx.HTTPError, KeyError, ValueError, IndexError):
            pass
        time.sleep(0.2)
    raise FleetDemoError(f"Prometheus did not scrape the {count} simulated exporters within {wait_s:g} s "
                         f"(see {root / 'prometheus.log'})")
