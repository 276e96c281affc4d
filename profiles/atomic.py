"""Atomic file writes and careful TOML reads.

A write goes to a temp file in the same directory, is fsynced, then renamed
over the target, so a crash (even `kill -9`) leaves the old file or the new
one, never half of either. A file that fails to parse raises `StateFileError`
naming the file and line; the file itself is never touched.

Under a folder marked `throwaway` (the demo's world, removed on exit) the
fsyncs are skipped: they bought nothing there and cost the demo's start a
tenth of a second on a busy disk.
"""
from __future__ import annotations

import os
import re
import stat
import tempfile
import tomllib
from pathlib import Path
from typing import Any


class StateFileError(Exception):
    """A saved file could not be read; the message is one line for the operator."""

    def __init__(self, path: Path, reason: str, line: int | None = None):
        self.path = Path(path)
        self.reason = reason
        self.line = line
        where = f"{self.path}:{line}" if line else str(self.path)
        super().__init__(f"{where}: {reason}")


def _parts_under(folder: Path, root: Path) -> tuple[str, ...]:
    """`folder`'s parts below `root`, read as text (empty when it is not under it)."""
    try:
        return folder.relative_to(root).parts
    except ValueError:
        return ()


def private_dirs(folder: Path) -> None:
    """Create `folder` (and missing parents) mode 0700; inside gpudeck's own config
    and data dirs, also tighten existing folders to 0700 (logs, prompts and task
    text can hold secrets; a folder closed to others closes everything below it).

    Only folders that are provably gpudeck's own are ever tightened: a path in
    its folders that holds `..` is refused, every step must be a real folder (not a link) owned by
    this user, and it must resolve inside the config or data dir. A folder
    elsewhere keeps its mode, whatever path was asked for."""
    from . import paths

    folder = Path(folder)
    roots = (paths.config_dir(), paths.data_dir())
    for root in roots:   # gpudeck builds its own paths without `..`: one that has them was built from input
        if ".." in _parts_under(folder, root):
            raise ValueError(f"{folder}: a path in gpudeck's own folders may not contain '..'")
    missing = []
    probe = folder
    while not os.path.lexists(probe) and probe != probe.parent:
        missing.append(probe)
        probe = probe.parent
    for item in reversed(missing):
        try:
            os.mkdir(item, 0o700)
        except FileExistsError:
            pass
    for root in roots:
        inside = _parts_under(folder, root)
        if not inside and folder != Path(root):
            continue
        real_root = os.path.realpath(root)
        here = Path(root)
        for part in ("", *inside):
            here = here / part if part else here
            try:
                info = os.lstat(here)
                real = os.path.realpath(here)
                if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.geteuid() \
                        or os.path.commonpath([real_root, real]) != real_root:
                    break              # a link, someone else's folder, or outside: not ours to change
                if info.st_mode & 0o077:
                    os.chmod(here, 0o700)
            except OSError:
                break


_THROWAWAY: list[Path] = []


def throwaway(root: Path) -> None:
    """Files written under `root` from now on are not fsynced: the whole folder is removed on exit."""
    _THROWAWAY.append(Path(root).resolve())


def _durable(path: Path) -> bool:
    if not _THROWAWAY:
        return True
    where = path.resolve()
    return not any(where.is_relative_to(root) for root in _THROWAWAY)


def write_atomic(path: Path, data: bytes | str, mode: int = 0o600) -> None:
    path = Path(path)
    private_dirs(path.parent)
    durable = _durable(path)
    if isinstance(data, str):
        data = data.encode("utf-8")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.fchmod(fd, mode)
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except FileNotFoundError:
            pass
        raise
    if not durable:
        return
    try:
        dfd = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)
    except OSError:
        pass


def write_toml(path: Path, doc: dict[str, Any], mode: int = 0o600) -> None:
    import tomli_w

    write_atomic(path, tomli_w.dumps(_drop_none(doc)), mode)


MAX_TOML_BYTES = 1 << 20   # a profile is a few hundred bytes; past this it is no file gpudeck wrote


def read_toml(path: Path, cap: int = MAX_TOML_BYTES) -> dict[str, Any]:
    """A TOML file gpudeck keeps: a FIFO, a device or a file past `cap` is one "unreadable" line
    (StateFileError), never a reader that waits for ever or takes the file's gigabytes."""
    from .capped_read import FileRefused, read_capped

    path = Path(path)
    try:
        raw = read_capped(path, cap)
    except FileNotFoundError:
        raise StateFileError(path, "file not found") from None
    except FileRefused as exc:
        raise StateFileError(path, f"unreadable ({str(exc).removeprefix(f'{path}: ')})") from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateFileError(path, f"not UTF-8 text ({exc.reason})") from None
    return parse_toml(path, text.replace("\r\n", "\n").replace("\r", "\n"))


def parse_toml(path: Path, text: str) -> dict[str, Any]:
    """`text` (the contents of `path`) as TOML; StateFileError names the line when tomllib does."""
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        text = str(exc)
        found = re.search(r"\(at line (\d+), column \d+\)", text)
        line = int(found.group(1)) if found else None
        msg = text[: found.start()].strip() if found else text
        raise StateFileError(path, f"invalid TOML: {msg}", line) from None


def _drop_none(value: Any) -> Any:
    """TOML has no null: leave unset keys out instead."""
    if isinstance(value, dict):
        return {k: _drop_none(v) for k, v in value.items() if v is not None}
    if isinstance(value, list):
        return [_drop_none(v) for v in value if v is not None]
    return value
