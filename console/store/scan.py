"""What a store reader returns: the readable records and a line per unreadable file."""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Generic, Iterable, TypeVar

from .files import FileRefused, read_capped

T = TypeVar("T")


@dataclass(frozen=True)
class Unreadable:
    path: Path
    kind: str        # "run", "crash record", "launch record"
    reason: str

    @property
    def line(self) -> str:
        return f"{self.path}: unreadable {self.kind} ({self.reason})"


@dataclass
class Scan(Generic[T]):
    records: list[T] = field(default_factory=list)
    unreadable: list[Unreadable] = field(default_factory=list)


def scan_files(paths: Iterable[Path], kind: str, read: Callable[[Path], T | None]) -> Scan[T]:
    """Every record `read` makes of `paths`, and one `Unreadable` line per file it refuses.

    The one loop behind every folder reader. `read` returns the record, or None
    for a file that is not (or not yet) a record; a file gone between the
    listing and the read is skipped; a refusal (`FileRefused`, a ValueError or
    OSError, nesting too deep) becomes its first line, cut to 160 characters.
    """
    found: Scan[T] = Scan()
    for path in paths:
        try:
            record = read(path)
        except FileNotFoundError:
            continue  # gone between the listing and the read
        except FileRefused as exc:
            reason = str(exc).removeprefix(f"{path}: ")
        except RecursionError:
            reason = "nested too deep"
        except (OSError, ValueError) as exc:  # not JSON, not UTF-8, or a field of the wrong type
            reason = (str(exc).splitlines() or [type(exc).__name__])[0][:160]
        else:
            if record is not None:
                found.records.append(record)
            continue
        found.unreadable.append(Unreadable(path, kind, reason))
    return found


def json_files(folder: Path) -> list[Path]:
    """The `*.json` files of a record folder; none when the folder does not exist yet."""
    return list(folder.glob("*.json")) if folder.is_dir() else []


def read_json(path: Path, cap: int) -> Any:
    """One record file parsed: a regular file of at most `cap` bytes, UTF-8 JSON (FileRefused, ValueError)."""
    return json.loads(read_capped(path, cap).decode("utf-8"))


_reported: set[str] = set()


def first_time(problems: list[Unreadable] | list[str]) -> list[str]:
    """The lines of `problems` not yet shown in this process (each bad file is named once)."""
    out = []
    for problem in problems:
        line = problem if isinstance(problem, str) else problem.line
        if line not in _reported:
            _reported.add(line)
            out.append(line)
    return out
