"""Reading a file gpudeck keeps (or was handed) without trusting what sits at the path.

Only a regular file is read, and only up to a size cap: a FIFO would block the
reader for ever, `/dev/zero` would fill memory, and a huge file would freeze
whoever parses it. Each refusal is one line naming the file. It lives here,
below every package, so profiles and the store (`console.store.files`) read
by the same rules.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path
from typing import BinaryIO


class FileRefused(ValueError):
    """The path is not a regular file under the cap, or cannot be read; one line naming it."""


def _regular_fd(path: Path | str) -> int:
    """A descriptor open for reading on `path`, if it is a regular file; FileRefused otherwise."""
    where = str(path)
    try:
        # O_NONBLOCK: opening a FIFO with no writer must not hang; it is refused just below
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
    except FileNotFoundError:
        raise
    except OSError as exc:
        raise FileRefused(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            raise FileRefused(f"{where}: not a regular file")
    except BaseException:
        os.close(fd)
        raise
    return fd


def open_regular(path: Path | str) -> BinaryIO:
    """`path` opened for reading in binary, if it is a regular file: for a reader that streams a file
    of any size (a server log) but must not wait on a FIFO or read a device for ever."""
    fd = _regular_fd(path)
    try:
        return os.fdopen(fd, "rb")
    except BaseException:
        os.close(fd)
        raise


def read_capped(path: Path | str, cap: int) -> bytes:
    """The whole file, if it is a regular file of at most `cap` bytes."""
    where = str(path)
    fd = _regular_fd(path)
    try:
        info = os.fstat(fd)
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
