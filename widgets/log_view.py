"""A bounded, fast log view: keeps a window of lines, highlights errors and warnings.

It draws lines handed to it and owns no I/O; older parts of a long log are
re-read by the screen and handed in again on demand.

Beside the text it draws a narrow gutter: optional line numbers (`#`), a
marker on the crash's decisive line (drawn unlike any other error line) and
a marker on the current line (the last search match or jump target), which
is what a copy takes. Search matches are highlighted in every shown line.
"""
from __future__ import annotations

import re
from collections import deque
from dataclasses import dataclass

from rich.highlighter import Highlighter
from rich.style import Style
from rich.text import Text
from textual.binding import Binding
from textual.geometry import Size
from textual.message import Message
from textual.strip import Strip
from textual.widgets import Log

from console.safe_text import clean_line

ERROR_RE = re.compile(r"error|exception|traceback|fatal|illegal|out of memory|killed|failed", re.I)
WARN_RE = re.compile(r"warn", re.I)
READY_RE = re.compile(r"ready to roll|startup complete|listening on", re.I)

DECISIVE_STYLE = "bold white on dark_red"
MATCH_STYLE = "bold black on yellow"
CURRENT_MARK = "›"
DECISIVE_MARK = "▶"


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


@dataclass(frozen=True)
class Found:
    """Where a search landed: the shown index, the log line number, k of n, and whether it wrapped."""

    index: int
    number: int
    ordinal: int
    total: int
    wrapped: bool

    def describe(self, needle: str) -> str:
        text = f"'{needle}' match {self.ordinal}/{self.total} · line {self.number}"
        return text + (" · wrapped to the other end" if self.wrapped else "")


class LogView(Log):
    """Textual's Log with a line window, error highlighting, search, filter, line numbers and marks."""

    BINDINGS = [Binding("end", "follow_end", "follow", show=False)]

    class FollowChanged(Message):
        """Follow mode went on or off from a key on the view itself."""

    DEFAULT_CSS = """
    LogView { height: 1fr; border-left: blank; }
    LogView:focus { border-left: outer $accent; }
    """

    def __init__(self, window: int = 20000, **kwargs) -> None:
        super().__init__(max_lines=window, highlight=True, **kwargs)
        self.highlighter = LogHighlighter()
        self.window: deque[tuple[int, str]] = deque(maxlen=window)  # (line number, text)
        self.shown: list[int] = []  # the log line number of each line on screen, parallel to self.lines
        self.next_number = 1
        self.filter: str | None = None
        self.follow = True
        self.numbers = False
        self.decisive: int | None = None  # log line number of the crash's decisive line
        self.current: int | None = None  # shown index of the current line (search match or jump)
        self.needle = ""  # the last search, highlighted wherever it occurs

    # -- feeding --------------------------------------------------------------
    def add_lines(self, lines: list[str]) -> None:
        lines = [clean_line(line) for line in lines]  # server logs are hostile text: no escape reaches the terminal
        pairs = []
        for line in lines:
            self.window.append((self.next_number, line))
            pairs.append((self.next_number, line))
            self.next_number += 1
        shown = pairs if self.filter is None else [p for p in pairs if self._matches(p[1])]
        if shown:
            self._write(shown)

    def _write(self, pairs: list[tuple[int, str]]) -> None:
        self.shown.extend(n for n, _ in pairs)
        # Textual's Log drops an empty line (''.splitlines() is []), which would shift every
        # later number; a one-space stand-in keeps one shown row per file line.
        self.write_lines([text or " " for _, text in pairs], scroll_end=self.follow)
        if self.follow and not self.is_vertical_scroll_end and not self.is_vertical_scrollbar_grabbed:
            # the Log scrolls only a view that is already at its end; a following one goes there
            self.scroll_end(animate=False, immediate=True, x_axis=False)
        extra = len(self.shown) - len(self.lines)
        if extra > 0:  # the Log dropped its oldest lines; so do we
            del self.shown[:extra]
            if self.current is not None:
                self.current = self.current - extra if self.current >= extra else None

    def _rewrite(self) -> None:
        self.clear()
        self.shown = []
        self.current = None
        self._write([p for p in self.window if self.filter is None or self._matches(p[1])])

    def reset(self, first_number: int = 1) -> None:
        self.window.clear()
        self.shown = []
        self.next_number = first_number
        self.current = None
        self.decisive = None
        self.clear()

    # -- what is drawn ----------------------------------------------------------
    # A following view stays at its end when its height changes (a terminal resize, the crash
    # panel appearing above it): the Log kept the old top line, so the last lines fell below the
    # view, and, no longer at the end, it never scrolled for new lines either.
    def _size_updated(self, size: Size, virtual_size: Size, container_size: Size, layout: bool = True) -> bool:
        resized = super()._size_updated(size, virtual_size, container_size, layout)
        if self.follow:
            self.scroll_to(y=self.max_scroll_y, animate=False, immediate=True)
        elif self.current is not None:   # a line jumped to stays in view when the view shrinks
            self._into_view(self.current, immediate=True)
        return resized

    def _into_view(self, index: int, immediate: bool = False) -> None:
        """Scroll so shown line `index` is in view, a few rows below the top (fewer in a short view)."""
        height = max(1, self.size.height)
        top = int(self.scroll_y)
        if not (top <= index < top + height):
            self.scroll_to(y=max(0, index - min(3, (height - 1) // 2)), animate=False, immediate=immediate)

    def _update_maximum_width(self, updates: int, size: int) -> None:
        super()._update_maximum_width(updates, size + 10)  # room for the widest gutter

    def gutter_width(self) -> int:
        digits = max(4, len(str(self.next_number))) if self.numbers else 0
        return digits + 2 if digits else 2

    def _render_line_strip(self, y: int, rich_style: Style) -> Strip:
        """One line: gutter (number, marks) then the text, error-highlighted, matches marked."""
        number = self.shown[y] if y < len(self.shown) else None
        body = Text(self._process_line(self.lines[y]), no_wrap=True)
        body.stylize(rich_style)
        body = self.highlighter(body)
        if number is not None and number == self.decisive:
            body.stylize(DECISIVE_STYLE)
        if self.needle:
            body.highlight_words([self.needle], MATCH_STYLE, case_sensitive=False)
        gutter = Text()
        if self.numbers:
            gutter.append(f"{number if number is not None else '':>{self.gutter_width() - 2}} ", style="dim")
        if number is not None and number == self.decisive:
            gutter.append(DECISIVE_MARK, style="bold red")
        elif y == self.current:
            gutter.append(CURRENT_MARK, style="bold yellow")
        else:
            gutter.append(" ")
        gutter.append(" ")
        line = gutter + body
        return Strip(line.render(self.app.console), line.cell_len)

    def _redraw(self) -> None:
        self._render_line_cache.clear()
        self.refresh()

    def toggle_numbers(self) -> bool:
        self.numbers = not self.numbers
        self._redraw()
        return self.numbers

    def mark_decisive(self, number: int | None) -> None:
        self.decisive = number
        self._redraw()

    # -- filter and search ----------------------------------------------------------
    def _matches(self, line: str) -> bool:
        return bool(self.filter) and self.filter.lower() in line.lower()

    def set_filter(self, text: str | None) -> None:
        """Show only lines containing `text` (None: all). The line the operator was on (the
        current line, else the top line in view) stays current and in view, unless following."""
        anchor = self._anchor()
        self.filter = text or None
        self._rewrite()
        if self.follow or anchor is None:
            return
        number, offset, was_current = anchor
        index = next((i for i, n in enumerate(self.shown) if n >= number), None)
        if index is None:
            return
        if was_current and self.shown[index] == number:
            self.current = index
        self.scroll_to(y=max(0, index - offset), animate=False, immediate=True)
        self._redraw()

    def _anchor(self) -> tuple[int, int, bool] | None:
        """(line number, its row from the top of the view, whether it is the current line)."""
        if not self.shown:
            return None
        top = int(self.scroll_y)
        if self.current is not None and 0 <= self.current < len(self.shown):
            return self.shown[self.current], max(0, self.current - top), True
        return self.shown[min(top, len(self.shown) - 1)], 0, False

    def matches(self, text: str) -> list[int]:
        """Shown indexes of every line containing `text` (case-insensitive)."""
        needle = text.lower()
        return [i for i, line in enumerate(self.lines) if needle in line.lower()] if needle else []

    def find(self, text: str, forward: bool = True) -> Found | None:
        """Move to the next (or previous) shown line containing `text`, wrapping once; None if none."""
        self.needle = text
        hits = self.matches(text)
        if not hits:
            self._redraw()
            return None
        start = self.current if self.current is not None else int(self.scroll_y) - (1 if forward else 0)
        if forward:
            after = [i for i in hits if i > start]
            index, wrapped = (after[0], False) if after else (hits[0], self.current is not None)
        else:
            before = [i for i in hits if i < start]
            index, wrapped = (before[-1], False) if before else (hits[-1], self.current is not None)
        self._go(index)
        return Found(index, self.shown[index], hits.index(index) + 1, len(hits), wrapped)

    def _go(self, index: int) -> None:
        self.follow = False
        self.current = index
        self._into_view(index)
        self._redraw()

    def jump_to_number(self, number: int) -> bool:
        """Make absolute log line `number` the current line if it is inside the window."""
        if self.filter:
            self.set_filter(None)
        if number not in self.shown:
            return False
        self._go(self.shown.index(number))
        return True

    def follow_end(self) -> None:
        """Back to following the end of the log: no current line, newest lines in view."""
        self.follow = True
        self.current = None
        self.scroll_end(animate=False)
        self._redraw()

    def action_follow_end(self) -> None:
        self.follow_end()
        self.post_message(self.FollowChanged())

    # -- the operator scrolling back ----------------------------------------------------
    # A scroll towards older lines ends following, and says so: the view had stopped moving with
    # new lines already (the Log keeps a view that is off the end where it is), but the log head
    # still said "follow ●", and f then turned following off instead of going back to the end.
    def _leave_end(self) -> None:
        if self.follow and self.scroll_y > 0:
            self.follow = False
            self.post_message(self.FollowChanged())

    def action_scroll_up(self) -> None:
        self._leave_end()
        super().action_scroll_up()

    def action_page_up(self) -> None:
        self._leave_end()
        super().action_page_up()

    def action_scroll_home(self) -> None:
        self._leave_end()
        super().action_scroll_home()

    def _on_mouse_scroll_up(self, event) -> None:
        if not (event.ctrl or event.shift):   # those scroll sideways
            self._leave_end()
        super()._on_mouse_scroll_up(event)

    # -- copying ------------------------------------------------------------------------
    def current_line(self) -> tuple[int, str] | None:
        """(line number, text) of the current line, else of the last line in view."""
        if not self.lines:
            return None
        index = self.current
        if index is None:
            index = min(len(self.lines) - 1, int(self.scroll_y) + max(1, self.size.height) - 1)
        number = self.shown[index]
        return number, self.text_of(number) or ""

    def text_of(self, number: int) -> str | None:
        """The text of log line `number` as it came (not as drawn), if it is in the window."""
        if not self.window:
            return None
        index = number - self.window[0][0]
        return self.window[index][1] if 0 <= index < len(self.window) else None
