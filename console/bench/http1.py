"""A minimal HTTP/1.1 client protocol for streamed responses.

Why not a general client: at 512 streams the client's cost is per chunk.
Here a read costs one callback: the common read, whole chunks of a 200
response, is parsed in place in the receive buffer (`buffer_updated`) and
its body bytes go straight to the sink, stamped with the time they arrived,
without waking a coroutine per chunk; anything else (a chunk split across
reads, the head, an error response) takes the general path.

Connections are kept alive and reused (`Pool`): a new TCP connection per
request cost more CPU than the rest of a short request. A reused connection
that the server had closed fails before any response byte; the client then
sends once more on a fresh connection, so no request fails for a stale
connection. Plain HTTP and HTTPS; no proxies, no redirects.
"""
from __future__ import annotations

import asyncio
import ssl
import time
from typing import Callable
from urllib.parse import urlsplit

BodySink = Callable[[bytes, float], "bool | None"]   # true: the body says it is whole (SSE [DONE])
# A body that said it is whole gets this long for its framing's end (the last chunk, the close):
# a server that sends [DONE] and holds the stream open ends the request here, on a connection not reused.
WHOLE_GRACE_S = 0.25
MAX_ERROR_BODY = 4096


class ResponseError(Exception):
    """The exchange ended badly; the message is short and stable (errors are grouped by it)."""


class Target:
    """Where requests go: host, port, path prefix, TLS."""

    def __init__(self, url: str):
        parts = urlsplit(url)
        if parts.scheme not in ("http", "https") or not parts.hostname:
            raise ValueError(f"not an http(s) URL: {url!r}")
        self.host = parts.hostname
        self.tls = parts.scheme == "https"
        self.port = parts.port or (443 if self.tls else 80)
        self.prefix = parts.path.rstrip("/")
        self.ssl_context = ssl.create_default_context() if self.tls else None

    def request(self, path: str, body: bytes, headers: dict[str, str] | None = None,
                keep_alive: bool = False, method: str = "POST", accept: str = "text/event-stream") -> bytes:
        lines = [f"{method} {self.prefix}{path} HTTP/1.1", f"Host: {self.host}:{self.port}",
                 "Content-Type: application/json", f"Accept: {accept}",
                 f"Content-Length: {len(body)}", "Connection: keep-alive" if keep_alive else "Connection: close"]
        lines += [f"{k}: {v}" for k, v in (headers or {}).items()]
        return ("\r\n".join(lines) + "\r\n\r\n").encode("latin-1") + body


# One receive buffer for every connection: asyncio calls get_buffer and then
# buffer_updated back to back on the loop's thread, and the bytes are copied
# out before the next read. Plain protocols would make asyncio allocate a
# 256 KiB bytes object per read, which at 512 streams cost more than the rest.
_RECV = bytearray(65536)
_RECV_VIEW = memoryview(_RECV)


class StreamingResponse(asyncio.BufferedProtocol):
    """Sends one request; feeds the de-chunked body to `sink` as it arrives."""

    __slots__ = ("request", "sink", "done", "transport", "status", "error_body", "last_bytes",
                 "_head", "_mode", "_need", "_state", "_pending", "_clock", "release", "_reusable",
                 "_whole")

    def __init__(self, request: bytes, sink: BodySink, done: asyncio.Future):
        self.request = request
        self.sink = sink
        self.done = done
        self.transport: asyncio.Transport | None = None
        self.status: int | None = None
        self.error_body = b""
        self._clock = time.perf_counter
        self.last_bytes = self._clock()
        self._head = b""
        self._mode = ""          # "chunked", "length" or "close"
        self._need = 0           # bytes left in this chunk (or body, for "length")
        self._state = 0          # chunked: 0 size line, 1 data, 2 CRLF after data
        self._pending = b""
        self.release: Callable[[asyncio.Transport], None] | None = None   # the pool's, when reusing
        self._reusable = False
        self._whole: asyncio.TimerHandle | None = None   # ends the request once the body said it is whole

    # -- asyncio callbacks
    def connection_made(self, transport) -> None:
        self.transport = transport
        if self.done.done():  # ended (stall, hang, stop) while connecting: send nothing, hold nothing
            transport.abort()
            return
        transport.write(self.request)

    def get_buffer(self, sizehint: int) -> memoryview:
        return _RECV_VIEW

    def buffer_updated(self, nbytes: int) -> None:
        """The common read, one or more whole chunks of a 200 response, is parsed in place.

        Each chunk's payload is cut straight out of the shared buffer and the body
        goes to the sink in one call; whatever is not whole chunks (the head, a
        chunk split across reads, the last chunk, an error response) takes the
        general path from where the fast one stopped.
        """
        if self._mode != "chunked" or self._state or self._pending or self.status != 200:
            self.data_received(bytes(_RECV_VIEW[:nbytes]))
            return
        buf, view = _RECV, _RECV_VIEW
        pos = 0
        body = None
        while True:
            eol = buf.find(b"\r\n", pos, nbytes)
            if eol < 0 or eol - pos > 8:   # no size line of a plain chunk is that long
                break
            try:
                size = int(buf[pos:eol], 16)
            except ValueError:
                break
            start = eol + 2
            end = start + size
            if size <= 0 or end + 2 > nbytes or buf[end] != 13 or buf[end + 1] != 10:
                break
            body = bytes(view[start:end]) if body is None else body + view[start:end]
            pos = end + 2
            if pos == nbytes:
                break
        if body is None:
            self.data_received(bytes(view[:nbytes]))
            return
        now = self.last_bytes = self._clock()
        if self.sink(body, now):
            self._body_whole()
        if pos < nbytes and not self.done.done():
            self._dechunk(bytes(view[pos:nbytes]), now)

    def data_received(self, data: bytes) -> None:
        now = self.last_bytes = self._clock()
        if self.status is None:
            self._head = (self._head + data) if self._head else data.lstrip(b"\r\n")  # a previous body's CRLF
            end = self._head.find(b"\r\n\r\n")
            if end < 0:
                if len(self._head) > 65536:
                    self._fail("response headers too large")
                return
            data = self._head[end + 4:]
            self._parse_head(self._head[:end])
            self._head = b""
            if self.done.done():
                return
        if self._mode == "chunked":
            self._dechunk(data, now)
        elif self._mode == "length":
            data = data[: self._need]
            self._need -= len(data)
            self._body(data, now)
            if self._need <= 0:
                self._finish()
        else:
            self._body(data, now)

    def eof_received(self) -> bool:
        # The server closed its side: close ours too, whatever the outcome, so no
        # socket is left in CLOSE-WAIT.
        if self.status is None:
            self._fail("server disconnected")
        elif self._mode == "close":
            self._finish()
        else:
            self._fail("stream cut off mid-response")
        if self.transport is not None:
            self.transport.close()
        return False

    def connection_lost(self, exc: Exception | None) -> None:
        if self.done.done():
            return
        if isinstance(exc, ConnectionResetError):
            self._fail("connection reset")
        elif self.status is None:
            self._fail("server disconnected")
        elif self._mode == "close" and exc is None:
            self._finish()
        else:
            self._fail("stream cut off mid-response")

    # -- framing
    def _parse_head(self, head: bytes) -> None:
        lines = head.split(b"\r\n")
        try:
            self.status = int(lines[0].split(b" ", 2)[1])
        except (IndexError, ValueError):
            self._fail(f"bad response line {lines[0][:60]!r}")
            return
        headers = {}
        for line in lines[1:]:
            key, _, value = line.partition(b":")
            headers[key.strip().lower()] = value.strip().lower()
        self._reusable = (self.release is not None and lines[0].startswith(b"HTTP/1.1")
                          and b"close" not in headers.get(b"connection", b""))
        if b"chunked" in headers.get(b"transfer-encoding", b""):
            self._mode = "chunked"
        elif b"content-length" in headers:
            self._mode = "length"
            raw = headers[b"content-length"]
            if not raw.isdigit():   # a server's garbage is a failed request, never a crash of ours
                self._fail(f"bad content-length {raw[:40]!r}")
                return
            self._need = int(raw)
            if self._need == 0:
                self._finish()
        else:
            self._mode = "close"
            self._reusable = False

    def _dechunk(self, data: bytes, now: float) -> None:
        """Undo chunked framing; all the body bytes of one read go to the sink in one call.

        A response that arrives whole (a fast server, a short answer) is one read
        holding many chunks: one sink call for them all, not one per chunk.
        """
        if self._pending:
            data = self._pending + data
            self._pending = b""
        parts: list[bytes] = []
        pos, size = 0, len(data)
        while pos < size:
            state = self._state
            if state == 1:
                take = min(self._need, size - pos)
                parts.append(data[pos:pos + take] if (pos or take < size) else data)
                pos += take
                self._need -= take
                if self._need == 0:
                    self._state = 2
            elif state == 2:
                if size - pos < 2:
                    self._pending = data[pos:]
                    break
                pos += 2
                self._state = 0
            else:
                eol = data.find(b"\r\n", pos)
                if eol < 0:
                    self._pending = data[pos:]
                    break
                try:
                    self._need = int(data[pos:eol].split(b";", 1)[0], 16)
                except ValueError:
                    self._fail("bad chunked encoding")
                    return
                pos = eol + 2
                if self._need == 0:
                    self._emit(parts, now)
                    self._finish()
                    return
                end = pos + self._need
                if end + 2 <= size and data[end:end + 2] == b"\r\n":
                    # the whole chunk and its CRLF are here (a response that came in one read):
                    # taken in this step, not one step each for the size, the data and the CRLF
                    parts.append(data[pos:end])
                    pos = end + 2
                    continue
                self._state = 1
        self._emit(parts, now)

    def _emit(self, parts: list[bytes], now: float) -> None:
        if parts:
            self._body(parts[0] if len(parts) == 1 else b"".join(parts), now)

    def _body(self, data: bytes, now: float) -> None:
        if not data:
            return
        if self.status == 200:
            if self.sink(data, now):
                self._body_whole()
        elif len(self.error_body) < MAX_ERROR_BODY:
            self.error_body += data

    # -- outcome
    def _body_whole(self) -> None:
        """The stream said it is over ([DONE]); the framing's end normally follows at once."""
        if self._whole is None and not self.done.done():
            self._whole = self.done.get_loop().call_later(WHOLE_GRACE_S, self._end_whole)

    def _end_whole(self) -> None:
        """No framing end came after [DONE]: the request is whole all the same; the connection is dropped."""
        self._reusable = False
        self._finish()

    def _finish(self) -> None:
        if self._whole is not None:
            self._whole.cancel()
        if not self.done.done():
            self.done.set_result(self.status)
        transport, self.transport = self.transport, None
        if transport is None:
            return
        if self._reusable and self.release is not None and not transport.is_closing():
            self.release(transport)
        else:
            transport.close()

    def _fail(self, message: str) -> None:
        if self._whole is not None:
            self._whole.cancel()
        if not self.done.done():
            self.done.set_exception(ResponseError(message))
        if self.transport is not None:
            self.transport.abort()

    @property
    def answered(self) -> bool:
        """Whether any of the response has come (its head, whole or in part)."""
        return self.status is not None or bool(self._head)

    def abort(self, message: str) -> None:
        """Used by the watchdog (stall, timeout) and on cancellation."""
        self._fail(message)


class _Idle(asyncio.Protocol):
    """Holds a kept-alive connection between requests; a server that closes it takes it out of the pool."""

    def __init__(self, pool: "Pool", transport: asyncio.Transport):
        self.pool = pool
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        if data.strip(b"\r\n"):  # anything but a body's trailing CRLF: not a connection to reuse
            self.transport.close()

    def eof_received(self) -> bool:
        self.transport.close()
        return False

    def connection_lost(self, exc) -> None:
        self.pool.forget(self.transport)


class Pool:
    """Idle kept-alive connections to one target."""

    def __init__(self):
        self.idle: list[asyncio.Transport] = []

    def take(self) -> asyncio.Transport | None:
        while self.idle:
            transport = self.idle.pop()
            if not transport.is_closing():
                return transport
        return None

    def give(self, transport: asyncio.Transport) -> None:
        transport.set_protocol(_Idle(self, transport))
        self.idle.append(transport)

    def forget(self, transport: asyncio.Transport) -> None:
        try:
            self.idle.remove(transport)
        except ValueError:
            pass

    def close(self) -> None:
        for transport in self.idle:
            transport.close()
        self.idle.clear()
