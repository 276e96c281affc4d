"""This machine as a host: argv exec'd directly, each command in its own process group,
which a closed or cancelled stream signals.

Processes are started, waited for and signalled off the event loop, in a thread of their
own. Starting one (fork and exec, the pipes, the wait for exec to succeed) blocks the thread
that does it, and on a loaded machine that took up to about 140 ms: on the event loop, that
is the console's UI frozen each time the GPU sampler reads its process list or a pane lists
processes. A command's own thread is used, not the shared pool, so that a slow command
cannot hold up the other work sent to threads.
"""
from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
import subprocess
import threading
import time
from typing import Callable, Sequence, TypeVar

from .base import CONNECTED, Host, HostError, LineStream, RunResult

T = TypeVar("T")
READ_LIMIT = 1 << 20  # the longest line a stream reads (as asyncio's subprocess limit had it)
POLL_S = 0.2          # how often a running command's thread looks whether it was cancelled
GRACE_S = 2.0         # from SIGTERM to SIGKILL, and from SIGKILL to giving up the wait


def _in_thread(fn: Callable[..., T], *args) -> "asyncio.Future[T]":
    """`fn(*args)` in a new daemon thread; its result or exception as a future of this loop."""
    loop = asyncio.get_running_loop()
    future: asyncio.Future = loop.create_future()

    def deliver(ok: bool, value) -> None:
        if not future.done():
            future.set_result(value) if ok else future.set_exception(value)

    def work() -> None:
        try:
            value, ok = fn(*args), True
        except BaseException as exc:  # noqa: BLE001 - handed to the awaiting coroutine
            value, ok = exc, False
        with contextlib.suppress(RuntimeError):  # the loop closed meanwhile: nobody is waiting
            loop.call_soon_threadsafe(deliver, ok, value)

    threading.Thread(target=work, name="gpudeck-local-process", daemon=True).start()
    return future


def _spawn(argv: list[str], stdin) -> subprocess.Popen:
    return subprocess.Popen(argv, stdin=stdin, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            start_new_session=True)


def _terminate_group(proc: subprocess.Popen, grace: float = GRACE_S) -> None:
    """SIGTERM to the command's process group, SIGKILL if it is still there after `grace`
    (blocking: called in the command's thread)."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, sig)
        try:
            proc.wait(timeout=grace)
            break
        except subprocess.TimeoutExpired:
            continue


def _close_pipes(proc: subprocess.Popen) -> None:
    for pipe in (proc.stdin, proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


class _TimedOut(Exception):
    pass


def _run_blocking(argv: list[str], data: bytes | None, timeout: float | None,
                  stop: threading.Event) -> tuple[RunResult, bool]:
    """One command to its end, in its thread: its output and whether it started, or _TimedOut
    once it ran past `timeout`; then, or when `stop` is set, its process group is gone."""
    try:
        proc = _spawn(argv, subprocess.PIPE if data is not None else subprocess.DEVNULL)
    except FileNotFoundError:
        return RunResult(127, "", f"command not found: {argv[0]}"), False
    except PermissionError:
        return RunResult(126, "", f"not executable: {argv[0]}"), False
    deadline = None if timeout is None else time.monotonic() + timeout
    pending = data
    try:
        while True:
            step = POLL_S if deadline is None else max(0.0, min(POLL_S, deadline - time.monotonic()))
            try:
                out, err = proc.communicate(pending, timeout=step)
                break
            except subprocess.TimeoutExpired:
                pending = None  # the input is sent once; a retried communicate loses no output
                if stop.is_set():
                    _terminate_group(proc)
                    return RunResult(-1, "", "cancelled"), True
                if deadline is not None and time.monotonic() >= deadline:
                    _terminate_group(proc)
                    raise _TimedOut() from None
    finally:
        _close_pipes(proc)
    return RunResult(proc.returncode if proc.returncode is not None else -1,
                     out.decode("utf-8", errors="replace"), err.decode("utf-8", errors="replace")), True


class _LocalStream(LineStream):
    def __init__(self, argv: Sequence[str]):
        super().__init__()
        self.argv = list(argv)
        self.proc: subprocess.Popen | None = None
        self._stdout: asyncio.StreamReader | None = None
        self._transports: list[asyncio.BaseTransport] = []

    async def start(self) -> None:
        started = _in_thread(_spawn, self.argv, subprocess.DEVNULL)
        try:
            self.proc = await asyncio.shield(started)
        except FileNotFoundError:
            raise HostError("other", f"command not found: {self.argv[0]}") from None
        except PermissionError:
            raise HostError("other", f"not executable: {self.argv[0]}") from None
        except asyncio.CancelledError:
            # cancelled while the thread was starting it: the process is ours to end
            with contextlib.suppress(Exception):
                self.proc = await started
            await self.close()
            raise
        self._stdout = await self._reader(self.proc.stdout)
        self._err_task = asyncio.create_task(self._collect_stderr(await self._reader(self.proc.stderr)))

    async def _reader(self, pipe) -> asyncio.StreamReader:
        loop = asyncio.get_running_loop()
        reader = asyncio.StreamReader(limit=READ_LIMIT, loop=loop)
        transport, _ = await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader, loop=loop), pipe)
        self._transports.append(transport)
        return reader

    async def _readline(self) -> bytes:
        if self.proc is None:
            await self.start()
        assert self._stdout is not None
        return await self._line_of(self._stdout)

    async def _finish(self) -> None:
        assert self.proc
        self.returncode = await _in_thread(self.proc.wait)
        await self._stderr_done()

    async def close(self) -> None:
        proc = self.proc
        if proc is None:
            return
        if proc.poll() is None:
            await asyncio.shield(_in_thread(_terminate_group, proc))
        for transport in self._transports:  # the pipes now, not when the loop is gone
            transport.close()
        _close_pipes(proc)
        self._stderr_stop()


class LocalHost(Host):
    """This machine, through subprocesses started and waited for off the event loop."""

    def __init__(self, name: str = "local"):
        super().__init__(name)
        self._set_status(CONNECTED)

    async def run(self, argv: Sequence[str], *, timeout: float | None = None,
                  input: str | None = None) -> RunResult:
        argv = list(argv)
        stop = threading.Event()
        done = _in_thread(_run_blocking, argv, input.encode() if input is not None else None, timeout, stop)
        try:
            result, started = await asyncio.shield(done)
        except _TimedOut:
            raise HostError("command-timeout", f"{shlex.join(argv)[:80]} timed out after {timeout:g}s") from None
        except asyncio.CancelledError:
            stop.set()  # the thread ends the process group; the cancel completes once it has
            with contextlib.suppress(Exception):
                await done
            raise
        if started:
            self.mark_good()
        return result

    def stream(self, argv: Sequence[str]) -> LineStream:
        return _LocalStream(argv)

    async def forward_port(self, remote_port: int, remote_host: str = "127.0.0.1") -> int:
        return remote_port
