"""The load generator as a child process: its command line, its events, stopping it.

The TUI runs sweeps this way so that 512 streams never share a loop with the
screen; the child speaks the JSON-lines protocol of `events.py` on stdout.
"""
from __future__ import annotations

import asyncio
import signal
import sys
from collections import deque
from typing import AsyncIterator

from .events import parse_line


def sweep_argv(values: dict, profile: str, tunnelled: bool) -> list[str]:
    """The load generator's command line for a setup form's values (it validates them itself).

    `num_prompts` may be "N" (per level) or "Nc" (N per stream of the level).
    `request_rate` (req/s, comma-separated) makes the levels rates instead of
    concurrencies, capped by `max_concurrency`.
    """
    rates = str(values.get("request_rate") or "").strip()
    levels = ["--request-rate", rates] if rates else ["--concurrency", values["levels"]]
    argv = [sys.executable, "-m", "console.bench", "--url", values["url"], *levels,
            "--api", values.get("api") or "completions", "--profile", profile, "--events"]
    prompts = str(values.get("num_prompts") or "").strip()
    if prompts.endswith("c") and prompts[:-1].strip().isdigit():
        argv += ["--prompts-per-stream", prompts[:-1].strip()]
    elif prompts:
        argv += ["--num-prompts", prompts]
    for flag, key in (("--input-len", "input_len"), ("--output-len", "output_len"), ("--model", "model"),
                      ("--max-concurrency", "max_concurrency"), ("--shared-prefix-len", "shared_prefix_len"),
                      ("--dataset", "dataset"), ("--temperature", "temperature"), ("--burstiness", "burstiness"),
                      ("--range-ratio", "range_ratio"), ("--api-key-env", "api_key_env")):
        if values.get(key) and (key not in ("max_concurrency", "burstiness") or rates):
            argv += [flag, str(values[key]).strip()]
    if tunnelled:
        argv.append("--tunnelled")
        if values.get("server_port"):
            argv += ["--server-port", str(values["server_port"])]
        if values.get("server_url"):
            argv += ["--server-url", str(values["server_url"])]
    return argv


def cli_argv(values: dict, profile: str) -> list[str]:
    """The `gpudeck bench ...` line that runs the sweep a setup form's values describe (the form's
    own URL: the CLI opens the SSH tunnel to a remote loopback URL itself, as the tab does)."""
    argv = sweep_argv(values, profile, False)
    return ["gpudeck", "bench", *(a for a in argv[3:] if a != "--events")]


async def _tail_of(stream, keep: int = 50) -> str:
    """The last lines a child wrote to stderr (a long sweep must not grow memory)."""
    lines: deque[str] = deque(maxlen=keep)
    while True:
        raw = await stream.readline()
        if not raw:
            return "\n".join(lines)
        lines.append(raw.decode(errors="replace").rstrip())


class SweepProcess:
    """One running sweep: `async for event in sweep.events()`, then `await sweep.finish()`."""

    def __init__(self, argv: list[str]):
        self.argv = argv
        self.proc: asyncio.subprocess.Process | None = None
        self._stderr: asyncio.Task | None = None

    @property
    def returncode(self) -> int | None:
        return self.proc.returncode if self.proc else None

    async def start(self) -> None:
        self.proc = await asyncio.create_subprocess_exec(
            *self.argv, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, limit=2**22)
        self._stderr = asyncio.create_task(_tail_of(self.proc.stderr))

    async def events(self) -> AsyncIterator[dict]:
        assert self.proc and self.proc.stdout
        async for line in self.proc.stdout:
            event = parse_line(line)
            if event is not None:
                yield event

    async def finish(self) -> tuple[int, str]:
        """Exit status and the tail of stderr, once the events have ended."""
        code = await self.proc.wait()
        return code, (await self._stderr).strip() if self._stderr else ""

    def stop(self) -> None:
        """Ask the generator to stop: it ends the running level as partial and saves."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)

    async def close(self, grace_s: float = 10.0) -> None:
        """Make sure the child is gone (SIGTERM, then SIGKILL after the grace period)."""
        if self.proc is not None and self.proc.returncode is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                await asyncio.wait_for(self.proc.wait(), grace_s)
            except asyncio.TimeoutError:
                self.proc.kill()
                await self.proc.wait()
        if self._stderr is not None and not self._stderr.done():
            self._stderr.cancel()
