"""The host's connection state over a real sshd: outages, stale data, latency, tunnels that return."""
from __future__ import annotations

import asyncio
import time

from console.runtime.fleet import Fleet
from console.hosts import HostError, SSHHost


async def _next(watch, predicate, timeout: float = 30.0):
    """The first status from `watch` that satisfies `predicate`."""
    async def scan():
        async for status in watch:
            if predicate(status):
                return status
    return await asyncio.wait_for(scan(), timeout)


async def _fail_until(host: SSHHost, failures: int) -> None:
    seen = 0
    while seen < failures:
        try:
            await host.run(["true"], timeout=5)
        except HostError:
            seen += 1


async def test_down_since_is_the_first_failure_and_survives_retries(ssh_profile, sshd):
    host = SSHHost(ssh_profile)
    try:
        await host.run(["true"])
        assert host.status.state == "connected" and not host.status.stale
        good = host.status.last_good
        assert good is not None
        sshd.stop()
        await _fail_until(host, 1)
        first = host.status.since
        assert host.status.state == "down" and host.status.down_since == first
        await _fail_until(host, 2)  # two more retries, each a new error
        assert host.status.since == first, "down since moved with a retry"
        assert host.status.down_since == first and host.status.stale
        assert host.status.last_good == good, "the last good reading is the one before the outage"
        assert host.status.latency_ms is None, "a latency from before the outage is still shown"
    finally:
        sshd.start()
    try:
        await host.run(["true"])
        assert host.status.state == "connected" and host.status.down_since is None
        assert host.status.since > first and not host.status.stale
    finally:
        await host.close()


async def test_watch_reports_the_drop_when_it_happens_and_the_reconnect(ssh_profile, sshd):
    host = SSHHost(ssh_profile)
    watch = host.watch()
    try:
        await host.run(["true"])
        await _next(watch, lambda st: st.state == "connected")
        before = time.time()
        sshd.drop_connections()  # no command is running: the drop must still be noticed
        down = await _next(watch, lambda st: st.state == "down")
        assert down.stale and down.down_since >= before and down.link == "down"
        await host.run(["true"])  # reconnects (sshd is still listening)
        links = []
        up = await _next(watch, lambda st: links.append(st.link) or st.state == "connected")
        assert "reconnecting" in links, f"no reconnecting state between down and connected: {links}"
        assert not up.stale and up.down_since is None
    finally:
        await watch.aclose()
        await host.close()


async def test_a_latency_measured_across_a_reconnect_is_not_shown(ssh_profile, sshd):
    fleet = Fleet([ssh_profile])
    host = fleet.hosts[ssh_profile.name]
    try:
        await fleet.ping(ssh_profile.name)
        sshd.stop()
        try:
            await _fail_until(host, 3)  # the backoff is now at least a second
        finally:
            sshd.start()
        started = time.monotonic()
        await fleet.ping(ssh_profile.name)  # waits out the backoff, reconnects, then runs `true`
        spanned_ms = (time.monotonic() - started) * 1000
        assert host.status.state == "connected"
        shown = host.status.latency_ms
        assert shown is None or shown < spanned_ms, \
            f"latency {shown} ms is the whole reconnect ({spanned_ms:.0f} ms), not a round trip"
        measured = await host.ping()
        assert measured is not None and host.status.latency_ms == measured
    finally:
        await fleet.close()


async def test_a_tunnel_comes_back_on_the_same_local_port_after_a_drop(ssh_profile, sshd):
    async def echo(reader, writer):
        writer.write(await reader.readline())
        await writer.drain()
        writer.close()

    server = await asyncio.start_server(echo, "127.0.0.1", 0)
    remote_port = server.sockets[0].getsockname()[1]

    async def through(port: int) -> bytes:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        writer.write(b"hello\n")
        await writer.drain()
        line = await reader.readline()
        writer.close()
        return line

    host = SSHHost(ssh_profile)
    watch = host.watch()
    try:
        local = await host.forward_port(remote_port)
        assert await through(local) == b"hello\n"
        await _next(watch, lambda st: st.state == "connected")
        sshd.drop_connections()
        await _next(watch, lambda st: st.state == "down")
        # nobody runs a command: the host brings the tunnel back by itself
        await _next(watch, lambda st: st.state == "connected")
        assert await host.forward_port(remote_port) == local
        assert await through(local) == b"hello\n"
    finally:
        await watch.aclose()
        await host.close()
        server.close()
        await server.wait_closed()


async def test_the_stale_line_names_the_outage_and_the_last_good_reading(ssh_profile, sshd):
    host = SSHHost(ssh_profile)
    try:
        await host.run(["true"])
        assert host.status.describe() == "connected"
        good = time.strftime("%H:%M:%S", time.localtime(host.status.last_good))
        sshd.stop()
        try:
            await _fail_until(host, 1)
            first = time.strftime("%H:%M:%S", time.localtime(host.status.down_since))
            assert host.status.describe() == f"down since {first} · last good reading {good}"
        finally:
            sshd.start()
    finally:
        await host.close()


async def test_a_tunnelled_socket_is_closed_when_its_link_drops_not_left_hanging(ssh_profile, sshd):
    held: list[asyncio.StreamWriter] = []

    async def silent(reader, writer):  # reads the request, never answers
        held.append(writer)
        await reader.read()

    server = await asyncio.start_server(silent, "127.0.0.1", 0)
    host = SSHHost(ssh_profile)
    try:
        local = await host.forward_port(server.sockets[0].getsockname()[1])
        reader, writer = await asyncio.open_connection("127.0.0.1", local)
        writer.write(b"GET / HTTP/1.1\r\n\r\n")
        await writer.drain()
        while not held:  # the request reached the far side through its channel
            await asyncio.sleep(0.02)
        sshd.drop_connections()
        assert await asyncio.wait_for(reader.read(), 30) == b"", "the local socket outlived its link"
        writer.close()
        # the tunnel itself keeps its local port through the drop
        assert await host.forward_port(server.sockets[0].getsockname()[1]) == local
    finally:
        await host.close()
        for w in held:
            w.close()
        server.close()
