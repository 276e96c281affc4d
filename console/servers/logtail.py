"""Follow a log file on a host by byte offset.

`tail -c +N -F` streams from byte N; the offset advances by the raw bytes of
each complete line, so after an SSH drop the tail restarts exactly where it
stopped: no line lost, none repeated.
"""
from __future__ import annotations

import asyncio
from typing import AsyncIterator

from ..hosts import Host, HostError


class LogTail:
    def __init__(self, host: Host, path: str, offset: int = 0, retry_s: float = 1.0):
        self.host = host
        self.path = path
        self.offset = offset
        self.retry_s = retry_s
        self.drops = 0

    async def lines(self, follow: bool = True) -> AsyncIterator[str]:
        """Lines from the current offset; with `follow`, forever (restarting after drops)."""
        while True:
            argv = ["tail", "-c", f"+{self.offset + 1}"]
            if follow:
                argv += ["-F"]
            argv += ["--", self.path]
            try:
                async with self.host.stream(argv) as stream:
                    start = self.offset
                    async for line in stream:
                        self.offset = start + stream.bytes_read
                        yield line
            except HostError:
                pass
            if not follow:
                return
            self.drops += 1
            await asyncio.sleep(self.retry_s)

    async def read_range(self, start: int, length: int) -> list[str]:
        """Bytes [start, start+length) of the file as lines (for scrolling back)."""
        result = await self.host.run(["sh", "-c", 'tail -c +"$1" -- "$2" | head -c "$3"', "sh",
                                      str(start + 1), self.path, str(length)], timeout=30)
        return result.stdout.splitlines()


def last_lines_argv(path: str, count: int) -> list[str]:
    """`tail` for the last `count` lines of `path` (the path can never be an option)."""
    return ["tail", "-n", str(int(count)), "--", path]
