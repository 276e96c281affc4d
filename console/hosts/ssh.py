"""A remote host over one asyncssh connection with many channels on it.

Streams end the command they started when they are closed or cancelled: a
watchdog on the remote side kills the command when the channel's stdin reaches
EOF (OpenSSH does not deliver SIGHUP to a command that has no terminal).
"""
from __future__ import annotations

import asyncio
import contextlib
import shlex
import signal
import socket
import time
from typing import Sequence

from profiles.profile import Profile

from ..wait_at_most import wait_at_most
from .base import (CONNECTED, CONNECTING, DOWN, IDLE, Host, HostError, HostKeyChanged, HostKeyUnknown, LineStream,
                   RunResult, remote_command)
from .ssh_import import import_asyncssh
from .ssh_config import known_keys, resolve_ssh_options, resolved_endpoint, ssh_target
from .tunnel import Tunnel

class _SSHStream(LineStream):
    def __init__(self, host: "SSHHost", argv: Sequence[str]):
        super().__init__()
        self.host = host
        self.argv = list(argv)
        self.proc = None

    async def start(self) -> None:
        conn = await self.host._connection()
        try:
            self.proc = await conn.create_process(remote_command(self.argv, watchdog=True), encoding=None)
        except Exception as exc:  # channel open failures, connection lost
            self.host._connection_failed(exc)
            raise self.host._as_host_error(exc) from None
        self._err_task = asyncio.create_task(self._collect_stderr(self.proc.stderr))

    async def _readline(self) -> bytes:
        if self.proc is None:
            await self.start()
        try:
            raw = await self._line_of(self.proc.stdout)
        except Exception as exc:
            self.host._connection_failed(exc)
            return b""
        if raw:
            self.host.mark_good()
        return raw

    async def _finish(self) -> None:
        with contextlib.suppress(Exception):
            await asyncio.wait_for(self.proc.wait_closed(), 5.0)
        status = self.proc.exit_status
        self.returncode = status if status is not None and status >= 0 else None
        await self._stderr_done()

    async def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.exit_status is None:
            with contextlib.suppress(Exception):
                proc.stdin.write_eof()  # the watchdog sees EOF and kills the command
            with contextlib.suppress(Exception):
                proc.send_signal("TERM")
            with contextlib.suppress(Exception):
                await asyncio.wait_for(proc.wait_closed(), 2.0)
            with contextlib.suppress(Exception):
                proc.close()
        self._stderr_stop()


class SSHHost(Host):
    """A remote host over one asyncssh connection with many channels on it.

    The connection opens on first use, is kept alive, and is reopened with
    backoff after it drops. Host keys are checked against gpudeck's own
    known_hosts and `~/.ssh/known_hosts`; an unknown key is refused.

    `measure_latency=False` (a one-shot CLI call) skips the ping that times a
    new connection: on a host whose login shell is slow to start, that extra
    session costs as much as the command the operator asked for.
    """

    def __init__(self, profile: Profile, measure_latency: bool = True):
        super().__init__(profile.name)
        self.profile = profile
        self.measure_latency = measure_latency
        self._conn = None
        self._lock = asyncio.Lock()
        self._failures = 0
        self._next_try = 0.0
        self._last_failure: tuple[float, HostError] | None = None  # when the latest attempt failed, and why
        self._wake = asyncio.Event()  # set by retry_now: a backoff wait ends early
        self._tunnels: dict[tuple[str, int], Tunnel] = {}  # local listeners; they outlive connections
        self._closing = False
        self._restoring = False
        self._background: set[asyncio.Task] = set()

    @property
    def tunnelled(self) -> bool:
        return True

    async def connect(self) -> None:
        await self._connection()

    async def _connection(self):
        if self._conn is not None and not self._conn.is_closed():
            return self._conn
        asked = time.monotonic()
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            failed = self._last_failure
            if failed is not None and failed[0] >= asked:
                # an attempt made while this call waited for the lock failed: that is this call's answer
                # too (else each waiter would sit out a longer backoff in turn: 0.5 + 1 + 2 + 4 + 8 s)
                raise failed[1].with_traceback(None)
            wait = self._next_try - time.monotonic()
            if wait > 0:
                self._wake.clear()
                await wait_at_most(self._wake.wait(), wait)
            asyncssh = import_asyncssh()

            self._set_status(CONNECTING, self.status.error)
            try:
                conn = await asyncio.wait_for(
                    asyncssh.connect(self.profile.ssh.host, **resolve_ssh_options(self.profile)),
                    self.profile.ssh.connect_timeout_s + 1)
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError):
                    self._set_status(DOWN, "cancelled")
                    raise
                error = await self._describe_connect_error(exc)
                self._failures += 1
                self._next_try = time.monotonic() + min(30.0, 0.5 * 2 ** (self._failures - 1))
                self._set_status(DOWN, str(error))
                self._last_failure = (time.monotonic(), error)
                raise error from None
            self._failures = 0
            self._next_try = 0.0
            self._conn = conn
            self._closing = False
            # the handshake is not a round trip: the latency comes from a ping on the new connection
            self._set_status(CONNECTED, None)
            self._spawn(self._watch_connection(conn))
            if self.measure_latency:
                self._spawn(self.ping())
            return conn

    def retry_now(self) -> None:
        """The operator asked to reconnect now: the next try does not wait out the backoff (up to 30 s)."""
        self._next_try = 0.0
        self._wake.set()

    def _spawn(self, coro) -> None:
        task = asyncio.get_running_loop().create_task(coro)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _watch_connection(self, conn) -> None:
        """Notice a drop when it happens (not at the next command), and bring tunnels back."""
        with contextlib.suppress(Exception):
            await conn.wait_closed()
        if self._conn is not conn or self._closing:
            return
        self._conn = None
        self._drop_tunnel_clients(conn)
        self._set_status(DOWN, "connection lost")
        if self._tunnels:
            await self._restore_tunnels()

    async def _restore_tunnels(self) -> None:
        """Reconnect with the usual backoff until the tunnels are open again or the host is closed."""
        if self._restoring:
            return
        self._restoring = True
        try:
            while not self._closing and self._tunnels:
                try:
                    await self._connection()
                    return
                except HostError:
                    continue
        finally:
            self._restoring = False

    def _drop_tunnel_clients(self, conn) -> None:
        for tunnel in self._tunnels.values():
            tunnel.drop(conn)

    def _connection_failed(self, exc: BaseException) -> None:
        """Called when a channel fails: drop the connection so the next call reconnects."""
        asyncssh = import_asyncssh()

        if isinstance(exc, (asyncssh.DisconnectError, asyncssh.ConnectionLost, OSError, BrokenPipeError)) \
                or (self._conn is not None and self._conn.is_closed()):
            if self._conn is not None:
                self._conn.close()
                self._drop_tunnel_clients(self._conn)
            self._conn = None
            self._set_status(DOWN, f"connection lost: {exc}" if str(exc) else "connection lost")
            if self._tunnels and not self._closing:
                self._spawn(self._restore_tunnels())

    def _as_host_error(self, exc: BaseException) -> HostError:
        if isinstance(exc, HostError):
            return exc
        return HostError("lost", f"{self.name}: {exc or type(exc).__name__}")

    async def _describe_connect_error(self, exc: BaseException) -> HostError:
        asyncssh = import_asyncssh()

        if isinstance(exc, HostError):
            return exc
        host, port = resolved_endpoint(self.profile)
        where = f"{host}:{port}"
        if isinstance(exc, socket.gaierror):
            return HostError("dns", f"cannot resolve host {host!r}: {exc.strerror}")
        if isinstance(exc, ConnectionRefusedError):
            return HostError("refused", f"connection refused by {where} (is sshd running on that port?)")
        if isinstance(exc, (asyncio.TimeoutError, TimeoutError)):
            return HostError("timeout", f"no answer from {where} within {self.profile.ssh.connect_timeout_s:g}s")
        if isinstance(exc, asyncssh.HostKeyNotVerifiable):
            fingerprint = None
            with contextlib.suppress(Exception):
                key = await asyncio.wait_for(
                    asyncssh.get_server_host_key(host, port), self.profile.ssh.connect_timeout_s)
                fingerprint = key.get_fingerprint() if key else None
            target = ssh_target(self.profile)
            known = known_keys(target)
            if known.host_keys:
                was = ", ".join(f"{fp} ({known.sources[fp]})" for fp in known.sources)
                return HostKeyChanged(
                    f"host key CHANGED for {target.key_name} ({where}): known_hosts has {was}, "
                    f"the host now offers {fingerprint or '(unknown)'}; if you expected the change, "
                    f"run `gpudeck profiles trust {self.name} --replace`", fingerprint, list(known.sources))
            return HostKeyUnknown(
                f"host key {fingerprint or '(unknown)'} of {where} is not trusted; "
                f"check it, then run `gpudeck profiles trust {self.name}`", fingerprint)
        if isinstance(exc, asyncssh.PermissionDenied):
            user = self.profile.ssh.user or "(from ssh config)"
            return HostError("auth", f"authentication failed for user {user} at {where}: "
                                     "no key from the agent, ssh config or identity_file was accepted")
        if isinstance(exc, OSError):
            return HostError("unreachable", f"cannot reach {where}: {exc.strerror or exc}")
        if isinstance(exc, asyncssh.Error):
            return HostError("other", f"ssh to {where} failed: {exc.reason}")
        return HostError("other", f"ssh to {where} failed: {exc}")

    async def run(self, argv: Sequence[str], *, timeout: float | None = None,
                  input: str | None = None) -> RunResult:
        conn = await self._connection()
        reads = None
        timeout = timeout if timeout is not None else self.profile.ssh.command_timeout_s
        command = remote_command(argv, watchdog=input is None)
        try:
            proc = await conn.create_process(command, encoding=None)
        except Exception as exc:
            self._connection_failed(exc)
            raise self._as_host_error(exc) from None
        try:
            if input is not None:
                proc.stdin.write(input.encode())
                proc.stdin.write_eof()
            reads = asyncio.gather(proc.stdout.read(), proc.stderr.read())
            out, err = await asyncio.wait_for(reads, timeout)
            await asyncio.wait_for(proc.wait_closed(), 5.0)
        except (asyncio.TimeoutError, asyncio.CancelledError) as exc:
            _discard(reads)
            with contextlib.suppress(Exception):
                proc.stdin.write_eof()
                proc.close()
            if isinstance(exc, asyncio.CancelledError):
                raise
            raise HostError("command-timeout", f"{shlex.join(argv)[:80]} timed out after {timeout:g}s on {self.name}") from None
        except Exception as exc:
            self._connection_failed(exc)
            raise self._as_host_error(exc) from None
        self.mark_good()
        status = proc.exit_status
        if status is None or status < 0:
            signal_name = proc.exit_signal[0] if proc.exit_signal else None
            status = 128 + getattr(signal, f"SIG{signal_name}", 0) if signal_name else 255
        return RunResult(status, out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"))

    def stream(self, argv: Sequence[str]) -> LineStream:
        return _SSHStream(self, argv)

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        key = (remote_host, remote_port)
        await self._connection()
        tunnel = self._tunnels.get(key)
        if tunnel is None:
            tunnel = self._tunnels[key] = Tunnel(lambda: self._conn, remote_host, remote_port)
            await tunnel.start()
        return tunnel.port

    async def close(self) -> None:
        self._closing = True
        tunnels, self._tunnels = list(self._tunnels.values()), {}
        for tunnel in tunnels:
            await tunnel.close()
        for task in list(self._background):
            task.cancel()
        await asyncio.gather(*self._background, return_exceptions=True)
        if self._conn is not None:
            self._conn.close()
            with contextlib.suppress(Exception):
                await self._conn.wait_closed()
            self._conn = None
        self._set_status(IDLE)


def _discard(future) -> None:
    """Cancel a gather we no longer wait for, and swallow its outcome (no 'never retrieved')."""
    if future is None:
        return
    future.cancel()
    future.add_done_callback(lambda f: f.cancelled() or f.exception())


async def fetch_host_key(profile: Profile):
    """The host's public key, fetched without trusting it (for `profiles trust`),
    with the target it was fetched from."""
    asyncssh = import_asyncssh()

    target = ssh_target(profile)
    try:
        key = await asyncio.wait_for(asyncssh.get_server_host_key(target.host, target.port),
                                     profile.ssh.connect_timeout_s)
    except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
        raise await SSHHost(profile)._describe_connect_error(exc) from None
    if key is None:
        raise HostError("host-key", f"{target.where} offered no host key")
    return target, key
