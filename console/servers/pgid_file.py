"""The launch wrapper's `<exit file>.pgid`: the process group it started the server's script in.

The wrapper (`lifecycle.WRAPPER`) writes the group's id there right after it
starts the script. The launcher reads it on the host, a probe reads it for a
record saved before its group was known, and the demo's signal handler reads
it for a launch caught in between. Every reader takes the group through
`parse`: a short text that is one whole number above 1, since a signal to
group 0 or 1 would reach processes that are not the server's.
"""
from __future__ import annotations

from pathlib import Path

MAX_BYTES = 32          # a pid and a newline; more is not what the wrapper writes
MAX_PGID = (1 << 31) - 1


def pgid_path(exit_file: str) -> str:
    return exit_file + ".pgid"


def parse(text: str | bytes) -> int | None:
    """The group written in `text`, or None for anything that is not one plausible group id."""
    if isinstance(text, bytes):
        text = text.decode("ascii", "replace")
    if len(text) > MAX_BYTES:
        return None
    text = text.strip()
    if not text.isascii() or not text.isdigit():
        return None
    value = int(text)
    return value if 1 < value <= MAX_PGID else None


def remote_read(exit_file: str) -> list[str]:
    """The command that reads the file on a host, bounded (its output goes through `parse`)."""
    return ["head", "-c", str(MAX_BYTES + 1), "--", pgid_path(exit_file)]


def read_local(exit_file: str) -> int | None:
    """The group from a local file; plain system calls only, so a signal handler may call it."""
    from ..store.files import read_capped

    try:
        return parse(read_capped(Path(pgid_path(exit_file)), MAX_BYTES))
    except (OSError, ValueError):   # missing, not a regular file, too long
        return None
