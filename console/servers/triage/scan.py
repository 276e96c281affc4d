"""The scanner: feed a log in, keep what the verdict needs, in bounded memory.

Candidate lines are found by the first position of each rule key in a
whole block of text (one multi-literal pass, see `prefilter`), then by
plain substring search from there; a rule's expression only runs on the
lines holding one of its keys. What is kept is per *run* of the server (an
episode: from one start banner to the next), because a log that holds a
crash, a restart and a healthy second run must be judged on the last run.

Within a run, for every rule: its first hit with context, its last hit,
and a count. Lifecycle signs that only need to be seen once (loading,
ready, serving) stop being looked for until the next run starts, which
keeps a million progress lines cheap.
"""
from __future__ import annotations

import heapq
import re
from collections import deque
from typing import Iterable

from .carriers import MAX_LINE, cap_line, clean_line, process_of
from .episode import KEEP_EXCEPTIONS, Episode, Hit
from .prefilter import FirstPositions
from .rules import ONCE_SIGNS, Rule, RuleSet, default_rules
from .verdict import TriageResult, decide

EXCERPT_BEFORE = 3
EXCERPT_AFTER = 6
_BATCH_LINES = 20000
_FRAME_FUNC = re.compile(r'File "[^"]*", line \d+, in (\S+)')
# an access-log line answering a request with an error status: within a few lines after a failure,
# the server answered the request that failed, so it was up and serving when it failed
_ANSWER = re.compile(r'HTTP/1\.[01]" [45][0-9][0-9]\b|request: (?:GET|POST|PUT|DELETE) \S+ \S+ [45][0-9][0-9]$')
_CALLED = re.compile(r"([A-Za-z_][A-Za-z0-9_]*)\(")  # names called on a frame's source line
_FIRST = FirstPositions()
# a repeat whose context is taken once per block: (rule, offset, line, first line, after ready, frame)
_Entry = tuple[Rule, int, int, str, bool, str | None]


class Triage:
    """Incremental classifier: feed lines as they arrive, ask for the verdict any time."""

    def __init__(self, rules: RuleSet | None = None):
        self.rules = rules or default_rules()
        self._pending = {rule.index for rule in self.rules.rules}
        self._server_hits: dict[int, Hit] = {}
        self.episode = Episode()
        self.episodes = 1
        self._filling: list[Hit] = []  # hits still short of after-context
        self._recent: deque[str] = deque(maxlen=EXCERPT_BEFORE)
        self._lines = 0  # whole lines consumed so far
        self._partial = ""
        self._partial_head: str | None = None  # head of an over-long unfinished line
        self._deferred: dict[int, _Entry] = {}  # rule -> its latest repeat in this block
        self._deferred_exceptions: deque[_Entry] = deque(maxlen=KEEP_EXCEPTIONS)
        self._deferred_frame: _Entry | None = None
        # scan state of the block being scanned (re-armed rules join it)
        self._live: dict[str, set[int]] = {}
        self._heap: list[tuple[int, str]] = []
        self._text = ""
        self._pos = 0
        self._next: dict[str, tuple[int, int]] = {}  # key -> (searched from, found at or -1) in this block
        self._clean_cache = (((-1, -1), ""), ((-1, -1), ""))
        self._resuming = tuple(rule for rule in self.rules.rules if rule.resumes)
        # rules whose message can be hard-wrapped onto the next line: failure signatures, not anchored
        self._wrappable = frozenset(r.index for r in self.rules.rules if r.kind == "class" and not r.anchored)
        keys = sorted({key for rule in self._resuming for key in rule.keys}, key=len, reverse=True)
        self._resume_keys = re.compile("|".join(map(re.escape, keys))) if keys else None
        self._awaiting_resume = False  # a failure notice after ready waits for an answered request
        self._resume_cache = (-1, -1)  # (searched from, found at or -1) in the block at hand
        self._resume_checked = -1  # offset of the last line, in the block at hand, checked to answer a request

    # ---------------------------------------------------------------- input
    def feed(self, line: str) -> None:
        """One line (with or without its newline)."""
        self.feed_text(line if line.endswith("\n") else line + "\n")

    def feed_lines(self, lines: Iterable[str]) -> None:
        """Many lines, scanned in large blocks."""
        batch: list[str] = []
        for line in lines:
            batch.append(line.rstrip("\n"))
            if len(batch) >= _BATCH_LINES:
                self.feed_text("\n".join(batch) + "\n")
                batch.clear()
        if batch:
            self.feed_text("\n".join(batch) + "\n")

    def feed_text(self, text: str) -> None:
        """A chunk of a log; a trailing partial line waits for the next chunk.
        An unfinished line longer than MAX_LINE keeps only its head and tail."""
        cut = text.rfind("\n")
        if cut < 0:
            self._grow_partial(text)
            return
        if self._partial or self._partial_head is not None:
            first_end = text.find("\n")
            whole = self._take_partial(text[:first_end])
            text = whole + text[first_end:]
            cut = text.rfind("\n")
        if cut + 1 < len(text):
            self._grow_partial(text[cut + 1:])
            text = text[:cut + 1]
        self._scan(text)

    def _grow_partial(self, piece: str) -> None:
        self._partial += piece
        if len(self._partial) > MAX_LINE:
            if self._partial_head is None:
                self._partial_head = self._partial[:MAX_LINE // 2]
            self._partial = self._partial[-(MAX_LINE // 2):]

    def _take_partial(self, rest: str) -> str:
        line = self._partial + rest
        if self._partial_head is not None:
            line = self._partial_head + " … " + line[-(MAX_LINE // 2):]
        self._partial, self._partial_head = "", None
        return line

    def close(self) -> None:
        """The log ended: count a last line that had no newline."""
        if self._partial or self._partial_head is not None:
            self._scan(self._take_partial("") + "\n")

    @property
    def lines_seen(self) -> int:
        return self._lines

    # ---------------------------------------------------------------- scanning
    def _live_keys(self) -> dict[str, set[int]]:
        """Each literal still worth looking for -> the pending rules it stands for."""
        live: dict[str, set[int]] = {}
        for index in self._pending:
            for key in self.rules.rules[index].keys:
                live.setdefault(key, set()).add(index)
        return live

    def _scan(self, text: str) -> None:
        """Find candidate lines by substring search for each live key, in
        order of position, and try the rules only on those lines."""
        self._fill_after(text)
        base = self._lines
        live = self._live = self._live_keys()
        heap = self._heap = []
        self._text = text
        self._next = {}
        self._clean_cache = (((-1, -1), ""), ((-1, -1), ""))
        self._resume_cache = (-1, -1)
        self._resume_checked = -1
        if self._awaiting_resume:
            self._look_for_resume(text, 0, base + 1)
        heap.extend((found, key) for key, found in _FIRST.first(text, live).items())
        heapq.heapify(heap)
        counted, counted_line, line_start = 0, base, -1
        tried: set[int] = set()  # rules already tried on the current line
        while heap:
            found, key = heapq.heappop(heap)
            indices = live.get(key)
            if not indices:
                continue
            start = text.rfind("\n", 0, found) + 1
            first_end = text.find("\n", found)
            first_end = len(text) if first_end < 0 else first_end
            if start != line_start:  # a new candidate line
                counted_line += text.count("\n", counted, start)
                counted = start
                self._pos = first_end
                if start > 0 and line_start < (prev := text.rfind("\n", 0, start - 1) + 1) and \
                        any(i in self._wrappable for i in indices):
                    # the line before (never a candidate) may start a message wrapped onto this one
                    self._examine(text, prev, start - 1, counted_line, indices, set(), wrapped_only=True)
                line_start, tried = start, set()
            self._examine(text, start, first_end, counted_line + 1, indices, tried)
            if live.get(key):
                again = text.find(key, first_end + 1)
                if again >= 0:
                    heapq.heappush(heap, (again, key))
        self._flush_deferred(text)
        self._lines = base + text.count("\n")
        self._remember_tail(text)
        self._text = ""

    def _examine(self, text: str, start: int, first_end: int, line_no: int,
                 indices: set[int], tried: set[int], wrapped_only: bool = False) -> None:
        """Try the pending rules of one key on this line (joined with the next,
        for a message wrapped at a space); a match must start on this line."""
        wanted = [index for index in sorted(indices) if index not in tried and index in self._pending]
        if not wanted:
            return
        tried.update(wanted)
        stop = text.find("\n", first_end + 1) if first_end < len(text) else -1
        stop = len(text) if stop < 0 else stop
        if wrapped_only:
            wanted = [i for i in wanted if not (self.rules.rules[i].anchored or self.rules.rules[i].kind == "sign")]
            if not wanted:
                return  # only a failure message can be wrapped onto the next line
        first = self._cleaned(text, start, first_end)
        joined: str | None = None  # with the next line; cleaned only when a rule that may wrap asks
        for index in wanted:
            if index not in self._pending:
                continue
            rule = self.rules.rules[index]
            if rule.anchored:
                found = rule.strict.search(first)
            else:
                if joined is None:
                    joined = first + " " + self._cleaned(text, first_end + 1, stop).strip() \
                        if stop > first_end + 1 else first
                found = rule.strict.search(joined)
            if not found or found.start() >= max(len(first), 1):
                continue
            if wrapped_only and found.end() <= len(first):
                continue  # wholly on the line before: it was seen when that line was examined
            self._record(rule, text, start, line_no, first)

    def _cleaned(self, text: str, start: int, end: int) -> str:
        """The cleaned line text[start:end]; the last two are kept, as a line is cleaned
        once as a candidate and once as the line after the one before it."""
        key = (start, end)
        cache = self._clean_cache
        if cache[0][0] == key:
            return cache[0][1]
        if cache[1][0] == key:
            return cache[1][1]
        cleaned = clean_line(cap_line(text[start:end]))
        self._clean_cache = (cache[1], (key, cleaned))
        return cleaned

    def _record(self, rule: Rule, text: str, start: int, line_no: int, first: str) -> None:
        episode = self.episode
        if rule.kind == "server":
            self._pending.discard(rule.index)
            self._drop_keys(rule)
            self._server_hits[rule.index] = Hit(rule, line_no, first, [], [])
            return
        if rule.kind == "sign" and rule.name == "start" and episode.eventful:
            self._new_episode(line_no)
            episode = self.episode
        if rule.kind == "sign" and rule.name == "frame":
            found = _FRAME_FUNC.search(first)
            if found:
                line_end = text.find("\n", start)
                code = _lines_after(text, line_end + 1, 1) if line_end >= 0 else []
                episode.last_frame = (line_no, found.group(1))
                episode.frame_calls = tuple(_CALLED.findall(clean_line(code[0]))) if code else ()
                self._deferred_frame = (rule, start, line_no, first, False, found.group(1))
            return
        after_ready = episode.ready_line is not None
        episode.counts[rule.index] = episode.counts.get(rule.index, 0) + 1
        is_exception = rule.name == "python-exception"
        answered = False
        frame = None
        if is_exception and episode.last_frame is not None and 0 < line_no - episode.last_frame[0] <= 6:
            frame = episode.last_frame[1]
        if rule.index not in episode.first:
            hit = self._make_hit(rule, text, start, line_no, first)
            if not after_ready and not rule.notice and (is_exception or rule.kind == "class") and \
                    any(_ANSWER.search(line) for line in hit.after):
                after_ready = answered = True  # the failed request was answered: the server was serving
            hit.after_ready, hit.frame = after_ready, frame
            episode.first[rule.index] = episode.last[rule.index] = hit
            if is_exception:
                if episode.first_exception is None:
                    episode.first_exception = hit
                episode.exceptions.append(hit)
        else:
            # a repeat: its context is taken once per block (see _flush_deferred), so a
            # log that repeats one error a million times costs no excerpt per line
            entry = (rule, start, line_no, first, after_ready, frame)
            self._deferred[rule.index] = entry
            if is_exception:
                self._deferred_exceptions.append(entry)
        if answered or rule.notice or (rule.kind == "sign" and rule.name in ("error", "http500")):
            if after_ready:  # did the server go on answering requests after it?
                episode.notice_line = line_no
                # the answer found for an earlier notice may come after this one too (the lines of one
                # traceback): then it answers for this one as well, and nothing is looked for again
                if self._awaiting_resume or episode.resumed_line is None or line_no >= episode.resumed_line:
                    self._awaiting_resume = True
                    line_end = text.find("\n", start)
                    self._look_for_resume(text, len(text) if line_end < 0 else line_end + 1, line_no + 1)
        if rule.kind == "sign":
            if rule.resumes and episode.notice_line is not None and line_no > episode.notice_line:
                episode.resumed_line = line_no
            if rule.name in ("ready", "serving") and episode.ready_line is None:
                episode.ready_line = line_no
            if rule.name == "http500" and after_ready:
                episode.http500_after_ready += 1
            if rule.name in ONCE_SIGNS:
                self._pending.discard(rule.index)
                self._drop_keys(rule)

    def _flush_deferred(self, text: str) -> None:
        """Give the latest repeats of this block their excerpts (while the block is at hand)."""
        episode = self.episode

        def build(entry: _Entry) -> Hit:
            rule, start, line_no, first, after_ready, frame = entry
            hit = self._make_hit(rule, text, start, line_no, first)
            hit.after_ready, hit.frame = after_ready, frame
            return hit

        for index, entry in self._deferred.items():
            episode.last[index] = build(entry)
        for entry in self._deferred_exceptions:
            episode.exceptions.append(build(entry))
        if self._deferred_frame is not None:
            episode.frame_hit = build(self._deferred_frame)
        self._deferred.clear()
        self._deferred_exceptions.clear()
        self._deferred_frame = None

    def _make_hit(self, rule: Rule, text: str, start: int, line_no: int, first: str) -> Hit:
        before = _lines_before(text, start, EXCERPT_BEFORE)
        if len(before) < EXCERPT_BEFORE:
            before = list(self._recent)[-(EXCERPT_BEFORE - len(before)):] + before
        line_end = text.find("\n", start)
        after = _lines_after(text, line_end + 1, EXCERPT_AFTER)
        hit = Hit(rule, line_no, first, [clean_line(cap_line(b)) for b in before],
                  [clean_line(cap_line(a)) for a in after])
        hit.process = process_of(text[start:start + 200])
        if len(hit.after) < EXCERPT_AFTER and len(self._filling) < 256:
            self._filling.append(hit)
        return hit

    def _drop_keys(self, rule: Rule) -> None:
        for key in rule.keys:
            self._live.get(key, set()).discard(rule.index)

    def _new_episode(self, line_no: int) -> None:
        """A new run of the server starts: what is looked for once is looked for again."""
        self._flush_deferred(self._text)
        self.episode = Episode(start_line=line_no)
        self.episodes += 1
        self._awaiting_resume = False  # a notice of the last run says nothing about this one
        self._rearm(rule for rule in self.rules.rules if rule.kind == "sign" and rule.name in ONCE_SIGNS)

    def _rearm(self, rules: Iterable[Rule]) -> None:
        """Look again, from the current line on, for once-signs already seen."""
        for rule in rules:
            if rule.index in self._pending:
                continue
            self._pending.add(rule.index)
            for key in rule.keys:
                indices = self._live.setdefault(key, set())
                was_live = bool(indices)
                indices.add(rule.index)
                if not was_live and self._text:
                    again = self._find_next(key, self._pos + 1)
                    if again >= 0:
                        heapq.heappush(self._heap, (again, key))

    def _look_for_resume(self, text: str, pos: int, line_no: int) -> None:
        """After a failure notice: find the next request answered (a `resumes` sign) from
        offset `pos` (the start of line `line_no`) on; a notice the server outlives is not
        its end. Looked ahead directly, with one search for all such keys, so that a log
        that alternates errors and answers costs no re-arming of rules per error."""
        keys = self._resume_keys
        if keys is None:
            return
        while True:
            found = self._next_resume(keys, text, pos)
            if found < 0:
                return  # not in this block: the next block is searched from its start
            begin = text.rfind("\n", 0, found) + 1
            end = text.find("\n", found)
            end = len(text) if end < 0 else end
            if begin == self._resume_checked or \
                    any(rule.strict.search(self._cleaned(text, begin, end)) for rule in self._resuming):
                self._resume_checked = begin  # notices in a row ask about the same answer: checked once
                self.episode.resumed_line = line_no + text.count("\n", pos, begin)
                self._awaiting_resume = False
                return
            line_no += text.count("\n", pos, end + 1)
            pos = end + 1

    def _next_resume(self, keys: re.Pattern[str], text: str, pos: int) -> int:
        """Offset of the next resumes key at or after `pos`, or -1; remembered per block,
        as notices come in order and most of them ask about the same stretch."""
        searched_from, found = self._resume_cache
        if 0 <= searched_from <= pos and (found < 0 or pos <= found):
            return found
        match = keys.search(text, pos)
        found = match.start() if match else -1
        self._resume_cache = (pos, found)
        return found

    def _find_next(self, key: str, pos: int) -> int:
        """`self._text.find(key, pos)`, remembered: keys looked for again and again after
        notices (most never in the block) would otherwise read the block once each time."""
        known = self._next.get(key)
        if known is not None and known[0] <= pos and (known[1] < 0 or pos <= known[1]):
            return known[1]
        found = self._text.find(key, pos)
        self._next[key] = (pos, found)
        return found

    def _fill_after(self, text: str) -> None:
        if not self._filling:
            return
        still: list[Hit] = []
        for hit in self._filling:
            need = EXCERPT_AFTER - len(hit.after)
            hit.after.extend(clean_line(cap_line(a)) for a in _lines_after(text, 0, need))
            if len(hit.after) < EXCERPT_AFTER:
                still.append(hit)
        self._filling = still

    def _remember_tail(self, text: str) -> None:
        for line in _lines_before(text, len(text), EXCERPT_BEFORE):
            self._recent.append(cap_line(line))

    # ---------------------------------------------------------------- verdict
    def result(self) -> TriageResult:
        return decide(self.episode, list(self._server_hits.values()), self.rules)


def _lines_before(text: str, start: int, count: int) -> list[str]:
    """Up to `count` whole lines ending just before offset `start` (a line start)."""
    out: list[str] = []
    end = start - 1  # the newline ending the previous line
    while count > 0 and end >= 0:
        begin = text.rfind("\n", 0, end) + 1
        out.append(text[begin:end])
        end = begin - 1
        count -= 1
    out.reverse()
    return out


def _lines_after(text: str, start: int, count: int) -> list[str]:
    out: list[str] = []
    while count > 0 and start < len(text):
        end = text.find("\n", start)
        if end < 0:
            end = len(text)
        out.append(text[start:end])
        start = end + 1
        count -= 1
    return out
