"""What the SSH tunnel costs: bulk bytes/s and short request round trips through it.

    .venv/bin/python tests/bench/tunnel_speed.py [--mib 64] [--requests 500] [--streams 32]

Starts a throwaway sshd (as the tests do) and a local byte server, then
prints: MiB/s of one bulk transfer through `SSHHost.forward_port` and
directly; and the median / p99 round trip of small request/answer pairs on
`--streams` parallel sockets, through the tunnel and directly.
"""
from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from console.hosts import SSHHost  # noqa: E402
from profiles.atomic import write_atomic  # noqa: E402
from profiles.profile import profile_from_dict  # noqa: E402
from tests.realparts import make_sshd  # noqa: E402


async def serve(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    """"B N\\n": send N bytes; "P\\n": answer "p\\n"."""
    try:
        while line := await reader.readline():
            if line.startswith(b"B "):
                left = int(line.split()[1])
                chunk = b"x" * (1 << 16)
                while left > 0:
                    writer.write(chunk[:left])
                    left -= len(chunk)
                    await writer.drain()
            else:
                writer.write(b"p\n")
                await writer.drain()
    except (asyncio.CancelledError, ConnectionError):
        pass  # the run is over
    writer.close()


async def bulk(port: int, size: int) -> float:
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    started = time.perf_counter()
    writer.write(f"B {size}\n".encode())
    got = 0
    while got < size:
        data = await reader.read(1 << 16)
        if not data:
            raise RuntimeError("bulk transfer cut short")
        got += len(data)
    elapsed = time.perf_counter() - started
    writer.close()
    return size / elapsed / (1 << 20)


async def round_trips(port: int, requests: int, streams: int) -> list[float]:
    times: list[float] = []

    async def one_stream(count: int) -> None:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        for _ in range(count):
            started = time.perf_counter()
            writer.write(b"P\n")
            await reader.readline()
            times.append((time.perf_counter() - started) * 1000)
        writer.close()

    await asyncio.gather(*(one_stream(requests // streams) for _ in range(streams)))
    return sorted(times)


async def main(args) -> None:
    base = Path(tempfile.mkdtemp(prefix="gpudeck-tunnel-"))
    os.environ["GPUDECK_HOME"] = str(base / "home")
    from profiles.paths import known_hosts_file

    sshd = make_sshd(base / "sshd")
    sshd.start()
    host = None
    try:
        write_atomic(known_hosts_file(), sshd.known_hosts.read_text())
        profile = profile_from_dict("bench", {"transport": "ssh", "ssh": {
            "host": "gpudeck-test", "config_file": str(sshd.ssh_config)}})
        server = await asyncio.start_server(serve, "127.0.0.1", 0)
        direct = server.sockets[0].getsockname()[1]
        host = SSHHost(profile)
        tunnel = await host.forward_port(direct)
        size = args.mib << 20
        for name, port in (("direct", direct), ("tunnel", tunnel)):
            mibs = await bulk(port, size)
            rtt = await round_trips(port, args.requests, args.streams)
            print(f"{name:>6}: bulk {mibs:8.1f} MiB/s · round trip median {statistics.median(rtt):6.2f} ms, "
                  f"p99 {rtt[int(0.99 * (len(rtt) - 1))]:6.2f} ms ({len(rtt)} on {args.streams} sockets)")
        server.close()
    finally:
        if host is not None:
            await host.close()
        sshd.stop()


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mib", type=int, default=64)
    parser.add_argument("--requests", type=int, default=500)
    parser.add_argument("--streams", type=int, default=32)
    asyncio.run(main(parser.parse_args()))
