"""What the scanner keeps of one run of the server, and what the verdict reads.

Shared by `scan` (which fills it) and `verdict` (which judges it), below
both, so neither imports the other's module to know its types.
"""
from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field

from .rules import Rule

KEEP_EXCEPTIONS = 16


@dataclass
class Hit:
    """One line a rule matched, with the lines around it."""

    rule: Rule
    line: int
    text: str
    before: list[str]
    after: list[str]
    frame: str | None = None  # for an exception: the function of the frame just above it
    after_ready: bool = False  # a ready/serving sign had been seen in this run before it
    process: str | None = None  # the process its prefix named ("EngineCore pid=104"), before prefixes were stripped


@dataclass
class Episode:
    """What one run of the server showed."""

    start_line: int = 0
    first: dict[int, Hit] = field(default_factory=dict)
    last: dict[int, Hit] = field(default_factory=dict)
    counts: dict[int, int] = field(default_factory=dict)
    ready_line: int | None = None  # first ready or serving sign
    notice_line: int | None = None  # the latest failure notice after ready
    resumed_line: int | None = None  # the last request answered after a failure notice (see Rule.notice)
    http500_after_ready: int = 0
    last_frame: tuple[int, str] | None = None
    frame_hit: Hit | None = None  # the deepest frame seen so far (its function in .frame)
    frame_calls: tuple[str, ...] = ()  # what that frame's source line calls
    exceptions: deque[Hit] = field(default_factory=lambda: deque(maxlen=KEEP_EXCEPTIONS))
    first_exception: Hit | None = None

    @property
    def eventful(self) -> bool:
        """Has this run got past its start (anything but loading lines)?"""
        return any(hit.rule.kind == "class" or hit.rule.name not in ("start", "loading")
                   for hit in self.first.values() if hit.rule.kind != "server")
