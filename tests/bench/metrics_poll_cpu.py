"""Console CPU per `/metrics` poll of a live server (the Server tab's line), against a peer.

Runs the host runtime's poll loop (console/runtime/metrics_poll.py) for a window
against: a real llama-server (`--metrics`, a 2.5 KB page), the real vLLM 0.32 page
saved in the fixtures (50 KB, served by `python -m http.server`), and the same vLLM
page through a loopback sshd's tunnel. The peer is one read with a fresh HTTP client,
what `gpudeck server status` does once per server. Prints this process's CPU per poll
and the peer's ratio; the servers and sshd run in other processes and are not counted.

    GPUDECK_TEST_ASSETS=... .venv/bin/python tests/bench/metrics_poll_cpu.py [--seconds 10]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


async def window(host, port: int, seconds: float, interval_s: float, warm: int = 2) -> tuple[int, float]:
    """(polls, CPU seconds) between the `warm`-th fresh reading and the last one of a poll loop that
    runs `seconds` more: the loop's one-off start (its HTTP client, the tunnel) is not counted."""
    from console.runtime.metrics_poll import poll_metrics

    record = SimpleNamespace(id="bench", config="bench", state="ready", port=port)
    marks: list[float] = []
    deadline = time.monotonic() + seconds + warm * interval_s

    def sampled(event) -> None:
        if not event.stale:
            marks.append(time.process_time())
    await poll_metrics(host, "bench", record, lambda: time.monotonic() < deadline, sampled, interval_s)
    measured = marks[warm - 1:]
    return len(measured) - 1, measured[-1] - measured[0]


async def fresh_client(host, port: int, reads: int) -> float:
    """CPU seconds per read with a new client each time (the peer)."""
    from console.servers.live_metrics import fetch

    cpu = time.process_time()
    for _ in range(reads):
        await fetch(host, port)
    return (time.process_time() - cpu) / reads


async def measure(seconds: float, interval_s: float) -> None:
    from console.hosts.local import LocalHost
    from console.session import HostSession
    from profiles.atomic import write_atomic
    from profiles.paths import known_hosts_file
    from profiles.profile import profile_from_dict
    from tests.realparts import free_port, make_sshd, start_llama_server, wait_port

    base = Path(tempfile.mkdtemp(prefix="gpudeck-bench-"))
    os.environ["GPUDECK_HOME"] = str(base / "home")
    pages = base / "pages"
    pages.mkdir()
    shutil.copy(ROOT / "tests" / "fixtures" / "bench" / "vllm_cpu_0.32_metrics.txt", pages / "metrics")
    vllm_port = free_port()
    page_server = subprocess.Popen([sys.executable, "-m", "http.server", str(vllm_port), "--bind", "127.0.0.1",
                                    "--directory", str(pages)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    llama = start_llama_server(base / "llama-server.log")
    sshd = make_sshd(base / "sshd")
    sshd.start()
    try:
        wait_port(vllm_port)
        write_atomic(known_hosts_file(), sshd.known_hosts.read_text())
        remote = HostSession.open(profile_from_dict("box", {
            "transport": "ssh", "ssh": {"host": "gpudeck-test", "config_file": str(sshd.ssh_config)}})).host
        local = LocalHost()
        for label, host, port in (("llama.cpp page, local", local, llama.port),
                                  ("vLLM 0.32 page, local", local, vllm_port),
                                  ("vLLM 0.32 page, SSH tunnel", remote, vllm_port)):
            polls, cpu = await window(host, port, seconds, interval_s)
            per_poll = cpu / max(polls, 1)
            peer = await fresh_client(host, port, 10)
            print(f"{label:<28} polls {polls:>3} · CPU {1000 * per_poll:6.2f} ms/poll "
                  f"({100 * cpu / seconds:.2f}% of one core at {1 / interval_s:g} Hz) · "
                  f"fresh client per read {1000 * peer:6.2f} ms ({peer / per_poll:.1f}x)")
        await remote.close()
    finally:
        sshd.stop()
        llama.stop()
        page_server.terminate()
        page_server.wait()
        shutil.rmtree(base, ignore_errors=True)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--interval", type=float, default=1.0)
    args = parser.parse_args()
    asyncio.run(measure(args.seconds, args.interval))


if __name__ == "__main__":
    main()
