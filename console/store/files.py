"""Reading a file gpudeck keeps (or was handed) without trusting what sits at the path.

Only a regular file is read, and only up to a size cap: a FIFO would block the
reader for ever, `/dev/zero` would fill memory, and a huge file would freeze
whoever parses it. Each refusal is one line naming the file.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path


class FileRefused(ValueError):
    """The path is not a regular file under the cap, or cannot be read; one line naming it."""


def read_capped(path: Path | str, cap: int) -> bytes:
    """The whole file, if it is a regular file of at most `cap` bytes."""
    where = str(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not hang; it is refused just below
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileRefused(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise FileRefused(f"{where}: not a regular file")
        if info.st_size > cap:
            raise FileRefused(f"{where}: {info.st_size} bytes, over the {cap}-byte limit")
        chunks, total = [], 0
        while True:
            chunk = os.read(fd, min(1 << 20, cap + 1 - total))
            if not chunk:
                break
            chunks.append(chunk)
            total += len(chunk)
            if total > cap:     # it grew while being read
                raise FileRefused(f"{where}: over the {cap}-byte limit")
        return b"".join(chunks)
    except OSError as exc:
        raise FileRefused(f"{where}: cannot read: {exc.strerror or exc}") from None
    finally:
        os.close(fd)
