"""One way to run commands on a host, local or over SSH.

Every command is an argv list. Locally it is exec'd directly; over SSH it is
quoted once with `shlex.join` and shipped base64-encoded inside a fixed
wrapper, `sh -c 'eval "$(echo B64 | base64 -d)"'`, whose characters mean the
same thing to sh, bash, zsh, fish, csh and tcsh. So an argument with spaces,
quotes, `( ) * ? $ ; & |` or newlines arrives byte-exact whatever the remote
login shell is.

Streams end the process they started when they are closed or cancelled:
locally by signalling the process group, remotely by a watchdog that kills the
command when the channel's stdin reaches EOF (OpenSSH does not deliver SIGHUP
to a command that has no terminal).
"""
from __future__ import annotations

import asyncio
import base64
import contextlib
import dataclasses
import os
import shlex
import signal
import socket
import time
from abc import ABC, abstractmethod
from dataclasses import dataclass
from pathlib import Path
from typing import AsyncIterator, Callable, Sequence

from profiles.profile import Profile

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

    def describe(self) -> str:
        """One line for a pane's stale mark: "reconnecting since 06:38:04 · last good reading 06:37:58"."""
        def clock(t: float | None) -> str:
            return time.strftime("%H:%M:%S", time.localtime(t)) if t else "N/A"

        if not self.stale:
            return self.state
        return f"{self.link} since {clock(self.down_since)} · last good reading {clock(self.last_good)}"


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


class LineStream:
    """Lines of a running command's stdout; closing it ends the command.

    Use as `async with host.stream(argv) as lines: async for line in lines:`.
    After the iteration ends, `returncode` holds the exit status (None if it
    was killed by us) and `stderr_tail` the last lines it wrote to stderr.
    """

    returncode: int | None = None

    def __init__(self) -> None:
        self.stderr_tail: list[str] = []
        self.bytes_read = 0  # raw bytes of the lines yielded so far (log tails resume from it)
        self._err_task: asyncio.Task | None = None

    async def __aenter__(self) -> "LineStream":
        await self.start()
        return self

    async def __aexit__(self, *exc) -> None:
        await self.close()

    def __aiter__(self) -> AsyncIterator[str]:
        return self._lines()

    async def _lines(self) -> AsyncIterator[str]:
        while True:
            raw = await self._readline()
            if not raw:
                await self._finish()
                return
            if not raw.endswith(b"\n"):
                # a last line without newline: not counted, so a resumed tail re-reads it whole
                await self._finish()
                yield raw.decode("utf-8", errors="replace").rstrip("\r")
                return
            self.bytes_read += len(raw)
            yield raw.decode("utf-8", errors="replace").rstrip("\r\n")

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
            raw = await reader.readline()
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


# ---------------------------------------------------------------- local


class _LocalStream(LineStream):
    def __init__(self, argv: Sequence[str]):
        super().__init__()
        self.argv = list(argv)
        self.proc: asyncio.subprocess.Process | None = None

    async def start(self) -> None:
        try:
            self.proc = await asyncio.create_subprocess_exec(
                *self.argv, stdin=asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True, limit=1 << 20)
        except FileNotFoundError:
            raise HostError("other", f"command not found: {self.argv[0]}") from None
        except PermissionError:
            raise HostError("other", f"not executable: {self.argv[0]}") from None
        self._err_task = asyncio.create_task(self._collect_stderr(self.proc.stderr))

    async def _readline(self) -> bytes:
        if self.proc is None:
            await self.start()
        assert self.proc and self.proc.stdout
        return await self.proc.stdout.readline()

    async def _finish(self) -> None:
        assert self.proc
        self.returncode = await self.proc.wait()
        await self._stderr_done()

    async def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.returncode is None:
            await _terminate_group(proc)
        else:
            _close_transport(proc)
        self._stderr_stop()


async def _terminate_group(proc: asyncio.subprocess.Process, grace: float = 2.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            await asyncio.wait_for(proc.wait(), grace)
            break
        except asyncio.TimeoutError:
            continue
    _close_transport(proc)


def _close_transport(proc: asyncio.subprocess.Process) -> None:
    """Close the pipes now, not when the loop is gone ("unclosed transport" at exit)."""
    transport = getattr(proc, "_transport", None)
    if transport is not None:
        transport.close()


class LocalHost(Host):
    """This machine, through asyncio subprocesses."""

    def __init__(self, name: str = "local"):
        super().__init__(name)
        self._set_status(CONNECTED)

    async def run(self, argv: Sequence[str], *, timeout: float | None = None,
                  input: str | None = None) -> RunResult:
        try:
            proc = await asyncio.create_subprocess_exec(
                *argv, stdin=asyncio.subprocess.PIPE if input is not None else asyncio.subprocess.DEVNULL,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
                start_new_session=True)
        except FileNotFoundError:
            return RunResult(127, "", f"command not found: {argv[0]}")
        except PermissionError:
            return RunResult(126, "", f"not executable: {argv[0]}")
        try:
            out, err = await asyncio.wait_for(
                proc.communicate(input.encode() if input is not None else None), timeout)
        except asyncio.TimeoutError:
            await _terminate_group(proc)
            raise HostError("command-timeout", f"{shlex.join(argv)[:80]} timed out after {timeout:g}s") from None
        except asyncio.CancelledError:
            await _terminate_group(proc)
            raise
        self.mark_good()
        return RunResult(proc.returncode if proc.returncode is not None else -1,
                         out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"))

    def stream(self, argv: Sequence[str]) -> LineStream:
        return _LocalStream(argv)

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        return remote_port


# ---------------------------------------------------------------- ssh


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
            raw = await self.proc.stdout.readline()
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


@dataclass
class SSHTarget:
    """Where a profile's SSH connection goes, resolved once through the ssh config
    (the profile's config_file, else ~/.ssh/config) for every command alike."""

    host: str  # HostName
    port: int
    user: str | None
    key_name: str  # what known_hosts is searched for: HostKeyAlias, else host or [host]:port
    config: list[str]  # ssh_config files read

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


def ssh_config_files(profile: Profile) -> list[str]:
    s = profile.ssh
    if s.config_file:
        return [str(Path(s.config_file).expanduser())]
    default = Path("~/.ssh/config").expanduser()
    return [str(default)] if os.access(default, os.R_OK) else []


def ssh_target(profile: Profile) -> SSHTarget:
    """The one resolver: `profiles trust`, `profiles check`, the TUI and every command use it."""
    import asyncssh

    s = profile.ssh
    config = ssh_config_files(profile)
    values: dict = {}
    if config:
        # asyncssh reads ~/.ssh/config by itself only inside connect(); name it explicitly
        try:
            parsed = asyncssh.SSHClientConnectionOptions(host=s.host, config=config).config
        except (OSError, ValueError, asyncssh.Error) as exc:
            raise HostError("other", f"cannot read ssh config {', '.join(config)}: {exc}") from None
        values = {key: parsed.get(key) for key in ("Hostname", "Port", "User", "HostKeyAlias")}
    host = str(values.get("Hostname") or s.host)
    port = int(s.port or values.get("Port") or 22)
    user = s.user or values.get("User")
    alias = values.get("HostKeyAlias")
    key_name = str(alias) if alias else (host if port == 22 else f"[{host}]:{port}")
    return SSHTarget(host=host, port=port, user=str(user) if user else None, key_name=key_name, config=config)


def known_hosts_files() -> list[Path]:
    from profiles import paths

    return [p for p in (paths.known_hosts_file(), Path("~/.ssh/known_hosts").expanduser()) if p.is_file()]


@dataclass
class KnownKeys:
    host_keys: list
    ca_keys: list
    revoked: list
    sources: dict  # fingerprint -> file it came from


def known_keys(target: SSHTarget) -> KnownKeys:
    """The keys known_hosts holds for the target's name, as OpenSSH looks them up:
    by HostKeyAlias or by host name (`[host]:port` off port 22), never by the
    address it resolves to, and never falling back to another port."""
    import asyncssh

    found = KnownKeys([], [], [], {})
    for path in known_hosts_files():
        try:
            table = asyncssh.read_known_hosts(str(path))
        except (OSError, ValueError, asyncssh.Error):
            continue
        host_keys, ca_keys, revoked = table.match(target.key_name, "", None)[:3]
        found.host_keys.extend(host_keys)
        found.ca_keys.extend(ca_keys)
        found.revoked.extend(revoked)
        for key in host_keys:
            found.sources.setdefault(key.get_fingerprint(), str(path))
    return found


def _resolve_ssh_options(profile: Profile) -> dict:
    """asyncssh.connect keyword arguments for a profile (no secrets involved)."""
    s = profile.ssh
    target = ssh_target(profile)
    known = known_keys(target)
    opts: dict = {
        # our own lookup (never None: that would trust any key)
        "known_hosts": (known.host_keys, known.ca_keys, known.revoked),
        "keepalive_interval": 15,
        "keepalive_count_max": 3,
        "connect_timeout": s.connect_timeout_s,
        "port": target.port,
        "config": target.config,
    }
    if target.user:
        opts["username"] = target.user
    if s.identity_file:
        opts["client_keys"] = [str(Path(s.identity_file).expanduser())]
    return opts


def resolved_endpoint(profile: Profile) -> tuple[str, int]:
    """HostName and Port as ~/.ssh/config (or the profile's config file) resolves them."""
    target = ssh_target(profile)
    return target.host, target.port


class SSHHost(Host):
    """A remote host over one asyncssh connection with many channels on it.

    The connection opens on first use, is kept alive, and is reopened with
    backoff after it drops. Host keys are checked against gpudeck's own
    known_hosts and `~/.ssh/known_hosts`; an unknown key is refused.
    """

    def __init__(self, profile: Profile):
        super().__init__(profile.name)
        self.profile = profile
        self._conn = None
        self._lock = asyncio.Lock()
        self._failures = 0
        self._next_try = 0.0
        self._tunnels: dict[tuple[str, int], _Tunnel] = {}  # local listeners; they outlive connections
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
        async with self._lock:
            if self._conn is not None and not self._conn.is_closed():
                return self._conn
            wait = self._next_try - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            import asyncssh

            self._set_status(CONNECTING, self.status.error)
            started = time.monotonic()
            try:
                conn = await asyncio.wait_for(
                    asyncssh.connect(self.profile.ssh.host, **_resolve_ssh_options(self.profile)),
                    self.profile.ssh.connect_timeout_s + 1)
            except BaseException as exc:
                if isinstance(exc, asyncio.CancelledError):
                    self._set_status(DOWN, "cancelled")
                    raise
                error = await self._describe_connect_error(exc)
                self._failures += 1
                self._next_try = time.monotonic() + min(30.0, 0.5 * 2 ** (self._failures - 1))
                self._set_status(DOWN, str(error))
                raise error from None
            self._failures = 0
            self._next_try = 0.0
            self._conn = conn
            self._closing = False
            # the handshake is not a round trip: the latency comes from a ping on the new connection
            self._set_status(CONNECTED, None)
            self._spawn(self._watch_connection(conn))
            self._spawn(self.ping())
            return conn

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
        import asyncssh

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
        import asyncssh

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
            tunnel = self._tunnels[key] = _Tunnel(self, remote_host, remote_port)
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


class _Tunnel:
    """A local port that reaches remote_host:remote_port through the host's current connection.

    The listener belongs to the host, not to one SSH connection, so a URL
    handed out stays the same across drops and reconnects. Each accepted
    socket gets its own channel; when the connection that carries it drops,
    the socket is closed at once - also one whose channel was still opening
    (asyncssh's own forwarder can leave such a socket open until the client
    gives up). While the link is down a new socket is closed straight away.
    """

    def __init__(self, host: "SSHHost", remote_host: str, remote_port: int):
        self.host = host
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
        conn = self.host._conn
        if conn is None or conn.is_closed():
            writer.close()
            return
        clients = self._clients.setdefault(conn, set())
        clients.add(writer)
        remote_writer = None
        try:
            remote_reader, remote_writer = await conn.open_connection(self.remote_host, self.remote_port)
            await asyncio.gather(_pipe(reader, remote_writer), _pipe(remote_reader, writer))
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


async def _pipe(reader, writer) -> None:
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


def _discard(future) -> None:
    """Cancel a gather we no longer wait for, and swallow its outcome (no 'never retrieved')."""
    if future is None:
        return
    future.cancel()
    future.add_done_callback(lambda f: f.cancelled() or f.exception())


def host_for(profile: Profile) -> Host:
    return LocalHost(profile.name) if profile.is_local else SSHHost(profile)


async def fetch_host_key(profile: Profile):
    """The host's public key, fetched without trusting it (for `profiles trust`),
    with the target it was fetched from."""
    import asyncssh

    target = ssh_target(profile)
    try:
        key = await asyncio.wait_for(asyncssh.get_server_host_key(target.host, target.port),
                                     profile.ssh.connect_timeout_s)
    except (OSError, asyncio.TimeoutError, asyncssh.Error) as exc:
        raise await SSHHost(profile)._describe_connect_error(exc) from None
    if key is None:
        raise HostError("host-key", f"{target.where} offered no host key")
    return target, key


def known_hosts_line(key_name: str, key) -> str:
    """One known_hosts line for `key_name` (a host, `[host]:port` or a HostKeyAlias)."""
    algorithm, blob = key.export_public_key("openssh").decode().split()[:2]
    return f"{key_name} {algorithm} {blob}\n"


def without_entries_for(text: str, key_name: str) -> tuple[str, int]:
    """known_hosts text minus the plain (unhashed) lines whose patterns name `key_name`;
    returns the text and how many lines went. Markers (@revoked, @cert-authority) stay."""
    kept, dropped = [], 0
    for line in text.splitlines(keepends=True):
        fields = line.split()
        if fields and not fields[0].startswith(("#", "@", "|")) and key_name in fields[0].split(","):
            dropped += 1
            continue
        kept.append(line)
    return "".join(kept), dropped
