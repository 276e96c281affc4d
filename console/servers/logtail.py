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


async def offset_of_last_lines(host: Host, path: str, count: int) -> int:
    """The byte offset where the last `count` lines of `path` start (as the file is
    now: its size is read once, and only that much of it is looked at)."""
    if count <= 0:
        return -1  # the caller starts at the end
    result = await host.run(["sh", "-c", 's=$(wc -c < "$1") || exit 1; '
                             'echo "$s"; head -c "$s" -- "$1" | tail -n "$2" | wc -c',
                             "sh", path, str(int(count))], timeout=30)
    numbers = result.stdout.split()
    if not result.ok or len(numbers) != 2 or not all(n.isdigit() for n in numbers):
        raise HostError("other", result.stderr.strip() or f"cannot read {path}")
    size, tail = (int(n) for n in numbers)
    return max(0, size - tail)


async def end_offset(host: Host, path: str) -> int:
    result = await host.run(["sh", "-c", 'wc -c < "$1"', "sh", path], timeout=30)
    if not result.ok or not result.stdout.strip().isdigit():
        raise HostError("other", result.stderr.strip() or f"cannot read {path}")
    return int(result.stdout.strip())


def last_lines_argv(path: str, count: int) -> list[str]:
    """`tail` for the last `count` lines of `path` (the path can never be an option)."""
    return ["tail", "-n", str(int(count)), "--", path]


async def follow_from(host: Host, path: str, count: int) -> int:
    """Where following a log starts: `count` whole lines before its end (0: at its end)."""
    return await offset_of_last_lines(host, path, count) if count > 0 else await end_offset(host, path)
