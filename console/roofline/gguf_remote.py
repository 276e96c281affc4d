"""A GGUF file's header on a host (local or SSH): a bounded prefix read with `head -c`, grown until it holds it."""
from __future__ import annotations

import asyncio
import base64

from .errors import RooflineError
from .gguf_header import FIRST_READ, MAX_HEADER, GGUFHeader, NeedMore, parse

# Prints NOFILE, or the first $2 bytes of the file in base64 (sh, head, base64 only).
_READ = r"""
[ -f "$1" ] || { echo NOFILE; exit 0; }
head -c "$2" -- "$1" | base64 | tr -d '\n'; echo
"""


def read_argv(path: str, size: int) -> list[str]:
    return ["sh", "-c", _READ, "gpudeck-gguf", path, str(size)]


async def read_remote_gguf(host, path: str, timeout: float = 60.0) -> GGUFHeader:
    """The header of a .gguf file on `host`; RooflineError says why not (no such file, not a GGUF, too long)."""
    from ..hosts import HostError

    source = f"{getattr(host, 'name', 'host')}:{path}"
    size = FIRST_READ
    while True:
        try:
            result = await host.run(read_argv(path, size), timeout=timeout)
        except HostError as exc:
            raise RooflineError(f"GGUF {source}: {exc}") from None
        if not result.ok:
            raise RooflineError(f"GGUF {source}: header read failed ({result.stderr.strip()[:200]})")
        if result.stdout.strip() == "NOFILE":
            raise RooflineError(f"GGUF {source}: no such file")
        try:
            buf = base64.b64decode(result.stdout.strip())
        except ValueError as exc:
            raise RooflineError(f"GGUF {source}: unreadable header ({exc})") from None
        try:
            return await asyncio.to_thread(parse, buf, source)
        except NeedMore:
            if len(buf) < size:
                raise RooflineError(f"GGUF {source}: file ends inside its header") from None
            if size >= MAX_HEADER:
                raise RooflineError(f"GGUF {source}: header longer than {MAX_HEADER // 2**20} MiB") from None
            size = min(size * 4, MAX_HEADER)
