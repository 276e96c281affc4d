"""What every host is: its states, its status chip, its errors, and the line stream of a command.

`remote_command` is the one wire form of an argv over SSH: quoted once with
`shlex.join` and shipped base64-encoded inside `sh -c 'eval "$(echo B64 |
base64 -d)"'`, whose characters mean the same to sh, bash, zsh, fish, csh and
tcsh, so an argument arrives byte-exact whatever the remote login shell is.
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import shlex
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from typing import AsyncIterator, Callable, Sequence

CONNECTED = "connected"
CONNECTING = "connecting"
DOWN = "down"
IDLE = "idle"
RECONNECTING = "reconnecting"  # HostStatus.link only: connecting again during an outage


@dataclass
class RunResult:
    returncode: int
    stdout: str
    stderr: str

    @property
    def ok(self) -> bool:
        return self.returncode == 0


@dataclass
class HostStatus:
    """The connection chip: state, since when, and why it is down.

    During an outage (`down`, or `connecting` again after a loss) `since` is
    the FIRST failure, however many retries follow; `last_good` is the wall
    time of the last exchange that worked, which is how old anything read
    from the host now is. `latency_ms` is one clean round trip on the current
    connection, and None while there is none (never a figure from before a drop).
    """

    state: str = IDLE
    since: float = 0.0
    error: str | None = None
    latency_ms: float | None = None
    last_good: float | None = None
    down_since: float | None = None

    @property
    def link(self) -> str:
        """connected · connecting (first time) · reconnecting (after a loss) · down · idle."""
        if self.state == CONNECTING and self.down_since is not None:
            return RECONNECTING
        return self.state

    @property
    def stale(self) -> bool:
        """True while data read from this host can no longer be refreshed."""
        return self.down_since is not None

    def copy(self) -> "HostStatus":
        return dataclasses.replace(self)

    def down_error(self, name: str) -> "HostError":
        """The answer to give at once while the host is known down: asking it again would only
        wait out its reconnect backoff."""
        return HostError("unreachable", self.error or f"{name} is not reachable")

    def describe(self) -> str:
        """One line for a pane's stale mark: "reconnecting since 06:38:04 · last good reading 06:37:58"."""
        from ..fmt import clock

        if not self.stale:
            return self.state
        return f"{self.link} since {clock(self.down_since or None)} · last good reading {clock(self.last_good or None)}"


class HostError(Exception):
    """A host could not be reached or a command could not run.

    `kind` is one of: dns, refused, timeout, auth, host-key, unreachable,
    lost, command-timeout, other. The message is one line for the operator.
    """

    def __init__(self, kind: str, message: str):
        self.kind = kind
        super().__init__(message)


class HostKeyUnknown(HostError):
    def __init__(self, message: str, fingerprint: str | None):
        self.fingerprint = fingerprint
        super().__init__("host-key", message)


class HostKeyChanged(HostError):
    """known_hosts holds a key for this host's name and the host offers another one
    (OpenSSH's "REMOTE HOST IDENTIFICATION HAS CHANGED"): never the same as unknown."""

    def __init__(self, message: str, fingerprint: str | None, known: list[str]):
        self.fingerprint = fingerprint
        self.known = known
        super().__init__("host-key", message)


def remote_command(argv: Sequence[str], watchdog: bool = False) -> str:
    """The single string sent over SSH for `argv` (see the module docstring)."""
    if not argv:
        raise ValueError("empty command")
    script = "exec " + shlex.join(argv)
    if watchdog:
        # Run the command in the background with stdin from /dev/null; a
        # second job waits for EOF on our stdin (the channel closing) and
        # kills it. Exit with the command's own status.
        # (A background job's stdin is /dev/null unless redirected, hence fd 3.)
        script = (
            "exec 3<&0\n"
            + shlex.join(argv) + " </dev/null 3<&- & p=$!\n"
            "(cat <&3 >/dev/null; kill -TERM $p) >/dev/null 2>&1 &\n"
            "exec 3<&-\n"
            "wait $p\n"
        )
    b64 = base64.b64encode(script.encode("utf-8")).decode("ascii")
    return f"sh -c 'eval \"$(echo {b64} | base64 -d)\"'"


LINE_LIMIT = 1 << 20  # the longest line a stream hands on whole; a longer one is cut to this


def cut_mark(length: int) -> str:
    """What ends a line cut to LINE_LIMIT: the line's true length, in bytes."""
    return f" … [line cut: {length:,} bytes, the first {LINE_LIMIT:,} shown]"


async def bounded_line(reader) -> tuple[bytes, int, bool]:
    """The next line of `reader` (an asyncio or asyncssh stream): (the line, whole up to LINE_LIMIT
    bytes, else its first LINE_LIMIT bytes; its length in the stream; whether it ended in a
    newline). The rest of a long line is read and dropped, never held; (b"", 0, False) at the end."""
    kept = bytearray()
    length = 0
    while True:
        try:
            piece = await reader.readuntil(b"\n")
            complete = True
            if not kept and len(piece) <= LINE_LIMIT + 1:
                return piece, len(piece), True  # the usual line, as it came
        except asyncio.IncompleteReadError as exc:  # the end; or asyncssh's window full before a newline
            piece, complete = exc.partial, False
            if piece and not reader.at_eof():
                length += len(piece)
                kept += piece[:max(0, LINE_LIMIT + 1 - len(kept))]
                continue
        except asyncio.LimitOverrunError:  # asyncio: no newline within the reader's limit
            piece, complete = await reader.read(LINE_LIMIT), False
            if piece:
                length += len(piece)
                kept += piece[:max(0, LINE_LIMIT + 1 - len(kept))]
                continue
        length += len(piece)
        kept += piece[:max(0, LINE_LIMIT + 1 - len(kept))]
        break
    if length <= LINE_LIMIT + complete:
        return bytes(kept), length, complete
    return bytes(kept[:LINE_LIMIT]), length, complete


class LineStream:
    """Lines of a running command's stdout; closing it ends the command.

    Use as `async with host.stream(argv) as lines: async for line in lines:`.
    After the iteration ends, `returncode` holds the exit status (None if it
    was killed by us) and `stderr_tail` the last lines it wrote to stderr.
    A line longer than LINE_LIMIT comes cut, ending in `cut_mark`: a server's
    log may hold one, and it must not end the stream (asyncio's readline
    raised on it, asyncssh's gave it in pieces).
    """

    returncode: int | None = None

    def __init__(self) -> None:
        self.stderr_tail: list[str] = []
        self.bytes_read = 0  # raw bytes of the lines yielded so far (log tails resume from it)
        self._err_task: asyncio.Task | None = None
        self._line_length = 0  # the last line's bytes in the stream (more than it kept when cut)
        self._line_complete: bool | None = None  # whether it ended in a newline (None: look at it)

    async def __aenter__(self) -> "LineStream":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            self._line_length, self._line_complete = 0, None
            raw = await self._readline()
            if not raw:
                await self._finish()
                return
            length = self._line_length or len(raw)
            complete = raw.endswith(b"\n") if self._line_complete is None else self._line_complete
            cut = cut_mark(length - complete) if length > len(raw) else ""
            text = raw.decode("utf-8", errors="replace").rstrip("\r\n") + cut
            if not complete:
                # a last line without newline: not counted, so a resumed tail re-reads it whole
                await self._finish()
                yield text
                return
            self.bytes_read += length
            yield text

    async def _line_of(self, reader) -> bytes:
        """The next line of stdout's `reader`, noting its length in the stream and whether it ended."""
        raw, self._line_length, self._line_complete = await bounded_line(reader)
        return raw

    async def _stderr_done(self) -> None:
        """After the command ended: give its last stderr lines a moment to arrive."""
        if self._err_task:
            with contextlib.suppress(Exception):
                await asyncio.wait_for(self._err_task, 1.0)

    def _stderr_stop(self) -> None:
        if self._err_task and not self._err_task.done():
            self._err_task.cancel()

    async def _collect_stderr(self, reader) -> None:
        while True:
            raw, _, _ = await bounded_line(reader)
            if not raw:
                return
            self.stderr_tail.append(raw.decode("utf-8", errors="replace").rstrip("\r\n"))
            del self.stderr_tail[:-20]

    async def start(self) -> None:
        raise NotImplementedError

    async def _readline(self) -> bytes:
        raise NotImplementedError

    async def _finish(self) -> None:
        raise NotImplementedError

    async def close(self) -> None:
        raise NotImplementedError


class Host(ABC):
    """What every engine module uses to reach a machine."""

    def __init__(self, name: str):
        self.name = name
        self.status = HostStatus(state=IDLE, since=time.time())
        self._listeners: list[Callable[[HostStatus], None]] = []
        self._connected_mono: float | None = None  # when the current connection came up

    def on_status(self, callback: Callable[[HostStatus], None]) -> Callable[[], None]:
        """Call `callback(status)` on every change; returns a function that unsubscribes."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    async def watch(self) -> AsyncIterator[HostStatus]:
        """The current status, then a copy at every change (for a per-host runtime's event loop)."""
        queue: asyncio.Queue[HostStatus] = asyncio.Queue()
        unsubscribe = self.on_status(lambda st: queue.put_nowait(st.copy()))
        try:
            yield self.status.copy()
            while True:
                yield await queue.get()
        finally:
            unsubscribe()

    def mark_good(self) -> None:
        """An exchange with the host just worked (no event: it happens on every read)."""
        self.status.last_good = time.time()

    def _set_status(self, state: str, error: str | None = None, latency_ms: float | None = None) -> None:
        now = time.time()
        old = self.status
        if latency_ms is not None and not self._clean_latency(latency_ms):
            latency_ms = None  # the measurement spanned a reconnect: not a round trip
        if state == CONNECTED:
            if old.state != CONNECTED:
                self._connected_mono = time.monotonic()
            down_since, last_good = None, now
        elif state in (DOWN, CONNECTING) and (old.down_since is not None or state == DOWN):
            # an outage: it began at the first failure, whatever retries follow
            down_since, last_good = old.down_since or now, old.last_good
        else:  # idle, or a first connect
            down_since, last_good = None, old.last_good
        if state != CONNECTED:
            self._connected_mono = None
        if state != old.state or error != old.error:
            since = down_since if down_since is not None else now
            if state == CONNECTED and latency_ms is None and old.state == CONNECTED:
                latency_ms = old.latency_ms
            self.status = HostStatus(state=state, since=since, error=error,
                                     latency_ms=latency_ms if state == CONNECTED else None,
                                     last_good=last_good, down_since=down_since)
        else:
            self.status.last_good = last_good
            if latency_ms is not None:
                self.status.latency_ms = latency_ms
        for callback in list(self._listeners):
            callback(self.status)

    def _clean_latency(self, latency_ms: float) -> bool:
        """A round trip cannot have lasted longer than the connection it ran on has existed."""
        if self._connected_mono is None:
            return True  # recorded together with the connect itself
        return latency_ms <= (time.monotonic() - self._connected_mono) * 1000 + 1.0

    async def ping(self, timeout: float = 10.0) -> float | None:
        """One round trip on an open connection, recorded as the latency; None when it failed.

        Connecting (and any backoff) happens first and is not timed.
        """
        try:
            await self.connect()
            started = time.monotonic()
            result = await self.run(["true"], timeout=timeout)
        except HostError:
            return None  # the host already marked itself down, with the reason
        if not result.ok:
            return None
        latency = (time.monotonic() - started) * 1000
        self._set_status(CONNECTED, None, latency)
        return self.status.latency_ms

    @abstractmethod
    async def run(self, argv: Sequence[str], *, timeout: float | None = None,
                  input: str | None = None) -> RunResult:
        """Run to completion; `HostError(kind='command-timeout')` past `timeout`."""

    @abstractmethod
    def stream(self, argv: Sequence[str]) -> LineStream:
        """A `LineStream` over the command's stdout lines."""

    @abstractmethod
    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        """A local port that reaches `remote_host:remote_port` as the host sees it."""

    async def connect(self) -> None:
        """Open the connection now (a no-op locally)."""

    async def close(self) -> None:
        """Release the connection and any forwards."""

    @property
    def tunnelled(self) -> bool:
        return False
