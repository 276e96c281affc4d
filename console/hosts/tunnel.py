"""Port forwards that belong to the host, not to one SSH connection."""
from __future__ import annotations

import asyncio
import contextlib
from typing import Any, Callable

class Tunnel:
    """A local port that reaches remote_host:remote_port through the host's current connection.

    The listener belongs to the host, not to one SSH connection, so a URL
    handed out stays the same across drops and reconnects. Each accepted
    socket gets its own channel; when the connection that carries it drops,
    the socket is closed at once - also one whose channel was still opening
    (asyncssh's own forwarder can leave such a socket open until the client
    gives up). While the link is down a new socket is closed straight away.
    """

    def __init__(self, connection: Callable[[], Any], remote_host: str, remote_port: int):
        # the host's current connection (None while the link is down), asked at each accept
        self._connection = connection
        self.remote_host = remote_host
        self.remote_port = remote_port
        self.port = 0
        self._server: asyncio.base_events.Server | None = None
        self._clients: dict[object, set[asyncio.StreamWriter]] = {}  # connection -> local sockets on it
        self._tasks: set[asyncio.Task] = set()

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accepted, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    async def _accepted(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._tasks.add(task)
        conn = self._connection()
        if conn is None or conn.is_closed():
            writer.close()
            return
        clients = self._clients.setdefault(conn, set())
        clients.add(writer)
        remote_writer = None
        try:
            remote_reader, remote_writer = await conn.open_connection(self.remote_host, self.remote_port)
            await asyncio.gather(pipe(reader, remote_writer), pipe(remote_reader, writer))
        except asyncio.CancelledError:
            pass  # the tunnel is closing: end quietly (asyncio logs a connection handler that ends cancelled)
        except Exception:  # noqa: BLE001 - refused remotely, channel or connection gone: the socket just closes
            pass
        finally:
            clients.discard(writer)
            writer.close()
            if remote_writer is not None:
                remote_writer.close()
            if task is not None:
                self._tasks.discard(task)

    def drop(self, conn) -> None:
        """Close every local socket carried by `conn` (it is gone)."""
        for writer in self._clients.pop(conn, set()):
            writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for clients in self._clients.values():
            for writer in clients:
                writer.close()
        self._clients.clear()
        for task in list(self._tasks):
            task.cancel()
        await asyncio.gather(*self._tasks, return_exceptions=True)


async def pipe(reader, writer) -> None:
    """Copy until EOF, then pass the EOF on."""
    while True:
        data = await reader.read(1 << 16)
        if not data:
            break
        writer.write(data)
        await writer.drain()
    with contextlib.suppress(Exception):
        if writer.can_write_eof():
            writer.write_eof()
