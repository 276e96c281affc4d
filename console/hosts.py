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
    """The connection chip: state, since when, and why it is down."""

    state: str = IDLE
    since: float = 0.0
    error: str | None = None
    latency_ms: float | None = None


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

    def on_status(self, callback: Callable[[HostStatus], None]) -> None:
        self._listeners.append(callback)

    def _set_status(self, state: str, error: str | None = None, latency_ms: float | None = None) -> None:
        if state != self.status.state or error != self.status.error:
            self.status = HostStatus(state=state, since=time.time(), error=error,
                                     latency_ms=latency_ms if latency_ms is not None else self.status.latency_ms)
        elif latency_ms is not None:
            self.status.latency_ms = latency_ms
        for callback in list(self._listeners):
            callback(self.status)

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
            return await self.proc.stdout.readline()
        except Exception as exc:
            self.host._connection_failed(exc)
            return b""

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
        self._forwards: dict[tuple[str, int], object] = {}

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
            self._forwards.clear()
            self._set_status(CONNECTED, None, (time.monotonic() - started) * 1000)
            return conn

    def _connection_failed(self, exc: BaseException) -> None:
        """Called when a channel fails: drop the connection so the next call reconnects."""
        import asyncssh

        if isinstance(exc, (asyncssh.DisconnectError, asyncssh.ConnectionLost, OSError, BrokenPipeError)) \
                or (self._conn is not None and self._conn.is_closed()):
            if self._conn is not None:
                self._conn.close()
            self._conn = None
            self._set_status(DOWN, f"connection lost: {exc}" if str(exc) else "connection lost")

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
        status = proc.exit_status
        if status is None or status < 0:
            signal_name = proc.exit_signal[0] if proc.exit_signal else None
            status = 128 + getattr(signal, f"SIG{signal_name}", 0) if signal_name else 255
        return RunResult(status, out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace"))

    def stream(self, argv: Sequence[str]) -> LineStream:
        return _SSHStream(self, argv)

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        key = (remote_host, remote_port)
        conn = await self._connection()
        listener = self._forwards.get(key)
        if listener is None:
            listener = await conn.forward_local_port("127.0.0.1", 0, remote_host, remote_port)
            self._forwards[key] = listener
        return listener.get_port()

    async def close(self) -> None:
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
