"""A bounded, fast log view: keeps a window of lines, highlights errors and warnings.

It draws lines handed to it and owns no I/O; older parts of a long log are
re-read by the screen and handed in again on demand.
"""
from __future__ import annotations

import re
from collections import deque

from rich.highlighter import Highlighter
from rich.text import Text
from textual.widgets import Log

from console.safe_text import clean_line

ERROR_RE = re.compile(r"error|exception|traceback|fatal|illegal|out of memory|killed|failed", re.I)
WARN_RE = re.compile(r"warn", re.I)
READY_RE = re.compile(r"ready to roll|startup complete|listening on", re.I)


class LogHighlighter(Highlighter):
    """Errors red, warnings yellow, ready lines green; everything else plain."""

    def highlight(self, text: Text) -> None:
        plain = text.plain
        if ERROR_RE.search(plain):
            text.stylize("bold red")
        elif WARN_RE.search(plain):
            text.stylize("yellow")
        elif READY_RE.search(plain):
            text.stylize("green")


class LogView(Log):
    """Textual's Log with a line window, error highlighting, search and filter."""

    DEFAULT_CSS = "LogView { height: 1fr; }"

    def __init__(self, window: int = 20000, **kwargs) -> None:
        super().__init__(max_lines=window, highlight=True, **kwargs)
        self.highlighter = LogHighlighter()
        self.window: deque[tuple[int, str]] = deque(maxlen=window)  # (line number, text)
        self.next_number = 1
        self.filter: str | None = None
        self.follow = True

    def add_lines(self, lines: list[str]) -> None:
        lines = [clean_line(line) for line in lines]  # server logs are hostile text: no escape reaches the terminal
        for line in lines:
            self.window.append((self.next_number, line))
            self.next_number += 1
        shown = lines if self.filter is None else [l for l in lines if self._matches(l)]
        if shown:
            self.write_lines(shown, scroll_end=self.follow)

    def reset(self, first_number: int = 1) -> None:
        self.window.clear()
        self.next_number = first_number
        self.clear()

    def _matches(self, line: str) -> bool:
        return bool(self.filter) and self.filter.lower() in line.lower()

    def set_filter(self, text: str | None) -> None:
        self.filter = text or None
        self.clear()
        lines = [l for _, l in self.window if self.filter is None or self._matches(l)]
        self.write_lines(lines, scroll_end=self.follow)

    def find(self, text: str, forward: bool = True) -> int | None:
        """Scroll to the next (or previous) shown line containing `text`; its index or None."""
        if not text:
            return None
        needle = text.lower()
        shown = self.lines
        current = int(self.scroll_y)
        count = len(shown)
        steps = range(1, count + 1)  # wraps around once
        order = [(current + i) % count if forward else (current - i) % count for i in steps] if count else []
        for index in order:
            if needle in shown[index].lower():
                self.follow = False
                self.scroll_to(y=index, animate=False)
                return index
        return None

    def jump_to_number(self, number: int) -> bool:
        """Scroll to absolute log line `number` if it is inside the window."""
        if self.filter:
            self.set_filter(None)
        if not self.window or not (self.window[0][0] <= number <= self.window[-1][0]):
            return False
        index = number - self.window[0][0]
        self.follow = False
        self.scroll_to(y=max(0, index - 3), animate=False)
        return True
