"""This machine as a host: argv exec'd directly, each command in its own process group,
which a closed or cancelled stream signals."""
from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import signal
from typing import Sequence

from .base import CONNECTED, Host, HostError, LineStream, RunResult


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
