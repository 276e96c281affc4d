"""What a store reader returns: the readable records and a line per unreadable file."""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Generic, TypeVar

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
