"""A real Prometheus server (Debian's `prometheus` package) scraping simulated DCGM exporters.

A missing binary is a test failure that says what to install, never a skip.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from tests.realparts import ROOT, free_port, wait_port
from tests.tiers import reaches


@reaches("prometheus")
def prometheus_binary() -> str:
    path = shutil.which("prometheus") or ("/usr/bin/prometheus" if os.access("/usr/bin/prometheus", os.X_OK) else None)
    if not path:
        pytest.fail("Prometheus not found: install it with `apt-get install prometheus` "
                    "(tests/run.sh does this when run as root)", pytrace=False)
    return path


@dataclass
class Prometheus:
    """A throwaway Prometheus on 127.0.0.1 with its config and data in a temp dir."""

    dir: Path
    targets: list[str]
    scrape_s: float = 1.0
    web_config: str | None = None
    port: int = field(default_factory=free_port)
    proc: subprocess.Popen | None = None

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def start(self) -> "Prometheus":
        self.dir.mkdir(parents=True, exist_ok=True)
        (self.dir / "prometheus.yml").write_text(
            f"global:\n  scrape_interval: {self.scrape_s:g}s\n  scrape_timeout: {self.scrape_s:g}s\n"
            "scrape_configs:\n  - job_name: dcgm\n    static_configs:\n"
            f"      - targets: {json.dumps(self.targets)}\n")
        argv = [prometheus_binary(), f"--config.file={self.dir / 'prometheus.yml'}",
                f"--storage.tsdb.path={self.dir / 'data'}", f"--web.listen-address=127.0.0.1:{self.port}"]
        if self.web_config:
            (self.dir / "web.yml").write_text(self.web_config)
            argv.append(f"--web.config.file={self.dir / 'web.yml'}")
        self.proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=open(self.dir / "prometheus.log", "ab"))
        if not wait_port(self.port, 20, self.proc):
            self.stop()
            log = (self.dir / "prometheus.log").read_text(errors="replace")[-1500:]
            pytest.fail(f"prometheus did not start:\n{log}", pytrace=False)
        return self

    def wait_up(self, count: int, timeout: float = 30.0) -> None:
        """Until `count` targets have been scraped successfully (an event, not a sleep of fixed length)."""
        deadline = time.monotonic() + timeout
        seen = None
        while time.monotonic() < deadline:
            try:
                doc = httpx.get(self.url + "/api/v1/query", params={"query": "count(up == 1)"}, timeout=2).json()
                result = doc["data"]["result"]
                seen = int(float(result[0]["value"][1])) if result else 0
                if seen >= count:
                    return
            except (httpx.HTTPError, KeyError, ValueError):
                pass
            time.sleep(0.2)
        pytest.fail(f"prometheus saw {seen} of {count} targets up after {timeout:g} s", pytrace=False)

    def stop(self) -> None:
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


@dataclass
class SimExporters:
    """`gpudeck sim dcgm` in its own process: one port per simulated host."""

    proc: subprocess.Popen
    hosts: list[dict]
    state_dir: Path

    @classmethod
    def start(cls, state_dir: Path, hosts: int, gpus: int) -> "SimExporters":
        proc = subprocess.Popen([sys.executable, "-m", "console", "sim", "dcgm", "--hosts", str(hosts),
                                 "--gpus-per-host", str(gpus), "--state-dir", str(state_dir)],
                                cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        line = proc.stdout.readline()
        if not line:
            pytest.fail(f"sim dcgm did not start: {proc.stderr.read()[-1500:]}", pytrace=False)
        return cls(proc, json.loads(line)["exporters"], state_dir)

    @property
    def targets(self) -> list[str]:
        return [f"127.0.0.1:{h['port']}" for h in self.hosts]

    def post(self, host: int, path: str) -> None:
        httpx.post(f"http://127.0.0.1:{self.hosts[host]['port']}{path}", timeout=5).raise_for_status()

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(10)
