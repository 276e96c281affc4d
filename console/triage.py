"""Crash triage: read a server log, say what killed it and on which line.

The rules live in `triage_rules.toml` (patterns -> class, with priorities),
so a new failure signature needs no code change. This module only applies
them, and applies them fast: each rule has literal keys, found by plain
substring search over whole blocks of text; the regular expressions only
run on the few lines holding a key, and a rule stops being looked for once
it has matched (only its first line matters for the verdict). A
million-line log of healthy progress lines is therefore scanned almost
entirely in C.

Two ways in:
  * `classify(lines)` / `classify_text(text)` / `classify_file(path)` for a
    finished log;
  * `Triage()` for a live one: `feed(line)` / `feed_text(chunk)` as the log
    grows, `result()` whenever the current verdict is wanted.
"""
from __future__ import annotations

import heapq
import re
import tomllib
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable

RULES_PATH = Path(__file__).with_name("triage_rules.toml")

CLASSES = (
    "cuda-illegal-address", "cuda-oom", "nccl", "process-killed", "port-in-use",
    "model-load", "engine-dead", "python-exception", "healthy", "unknown",
)
CRASH_CLASSES = frozenset(CLASSES) - {"healthy", "unknown"}
SERVERS = ("sglang", "vllm", "llama.cpp", "tgi", "trtllm", "unknown")

EXCERPT_BEFORE = 3
EXCERPT_AFTER = 6
EXCERPT_WIDTH = 400
_BATCH_LINES = 20000

# Colour codes as they arrive: real ESC, caret-escaped (^[[0m), syslog's
# octal escape (#033[0m) and the Windows console's rendering (←[0m).
_ESCAPES = re.compile(r"(?:\x1b|\^\[|#033|\u2190)\[[0-9;?]*[A-Za-z]|\r")

# Line prefixes added by whatever carried the log, removed (repeatedly) so
# that anchored rules and excerpts see the server's own text.
_PREFIXES = re.compile(
    r"(?:"
    r">[ \t]?(?:[ \t]*\|[ \t]?)?"  # markdown quote, Buildkite's "  | " gutter
    r"|\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?(?:Z|[+-]\d\d:?\d\d)?[ \t]+(?:(?:stdout|stderr)[ \t]+[FP][ \t]+)?"  # docker / CRI
    r"|\[\d{4}-\d\d-\d\dT[\d:.]+Z?\][ \t]+"  # CI timestamps
    r"|[A-Z][a-z]{2}[ \t]+\d{1,2}[ \t]\d\d:\d\d:\d\d[ \t]\S+[ \t][\w.\-/@]+(?:\[\d+\])?:[ \t]"  # journald / syslog
    r"|\([\w.\-]+(?:[ \t]+pid=\d+)?(?:,[ \t]*ip=[\d.]+)?\)[ \t]?"  # Ray / vLLM process tags
    r"|[\w.\-]+-\d+[ \t]+\|[ \t]"  # docker compose
    r")"
)


def clean_line(line: str) -> str:
    """The server's own text: colour codes and carrier prefixes removed."""
    text = _ESCAPES.sub("", line).rstrip("\n")
    for _ in range(4):
        match = _PREFIXES.match(text)
        if not match or match.end() == 0:
            break
        text = text[match.end():]
    return text.rstrip()


@dataclass(frozen=True)
class Rule:
    """One failure (or health) signature from the rules file."""

    index: int
    kind: str  # "class" or "server"
    name: str  # the class, or the server name
    pattern: str  # as written in the rules file (grep -E compatible)
    priority: int
    summary: str = ""
    weak: bool = False
    ready: bool = False
    anchored: bool = False
    strict: re.Pattern = field(default=None, compare=False)  # type: ignore[assignment]  # on a cleaned line
    keys: tuple[str, ...] = ()  # literals one of which every matching line holds


_SPECIAL = set(".^$*+?()[]{}|\\")
_QUANTIFIERS = set("*+?{")
# Words too common in healthy logs to be a good first filter.
_COMMON = {"process", "memory", "error", "model", "engine", "server", "failed",
           "the", "for", "not", "load", "exit", "code", "cuda", "CUDA"}


def _split_top(pattern: str) -> list[str]:
    """The top-level alternatives of a pattern."""
    parts, depth, in_class, current, i = [], 0, False, [], 0
    while i < len(pattern):
        ch = pattern[i]
        if ch == "\\" and i + 1 < len(pattern):
            current.append(pattern[i:i + 2])
            i += 2
            continue
        if in_class:
            in_class = ch != "]"
        elif ch == "[":
            in_class = True
        elif ch == "(":
            depth += 1
        elif ch == ")":
            depth -= 1
        elif ch == "|" and depth == 0:
            parts.append("".join(current))
            current = []
            i += 1
            continue
        current.append(ch)
        i += 1
    parts.append("".join(current))
    return parts


def _literal_runs(alternative: str) -> list[str]:
    """Runs of plain characters that any match of `alternative` must contain.

    Groups, character classes, escapes like \\s and quantified characters
    break a run; so do spaces, so that a message wrapped at a space still
    holds each run on one line."""
    runs, current, i, depth = [], [], 0, 0
    text = alternative.lstrip("^")

    def flush():
        if current:
            runs.append("".join(current))
            current.clear()

    while i < len(text):
        ch = text[i]
        nxt = text[i + 1] if i + 1 < len(text) else ""
        if ch == "[":
            end = text.index("]", i + 2 if nxt == "]" else i + 1)
            flush()
            i = end + 1
            if i < len(text) and text[i] in _QUANTIFIERS:
                i += 1
            continue
        if ch == "(":
            depth, j = 1, i + 1
            while j < len(text) and depth:
                if text[j] == "\\":
                    j += 2
                    continue
                depth += {"(": 1, ")": -1}.get(text[j], 0)
                j += 1
            flush()
            i = j + (1 if j < len(text) and text[j] in _QUANTIFIERS else 0)
            continue
        if ch == "\\":
            if nxt and not nxt.isalnum():
                literal = nxt
                i += 2
                if i < len(text) and text[i] in _QUANTIFIERS:
                    flush()
                    i += 1
                    continue
                current.append(literal)
                continue
            flush()
            i += 2
            continue
        if ch in _SPECIAL or ch == " ":
            flush()
            i += 1
            continue
        if nxt in _QUANTIFIERS:
            flush()
            i += 2
            continue
        current.append(ch)
        i += 1
    flush()
    return runs


def _derive_keys(pattern: str) -> tuple[str, ...]:
    keys = []
    for alternative in _split_top(pattern):
        runs = [r for r in _literal_runs(alternative) if len(r) >= 3]
        if not runs:
            raise ValueError(f"rules: no literal of 3+ characters in {alternative!r}; give keys = [...]")
        keys.append(max(runs, key=lambda r: (r not in _COMMON and len(r) >= 5, len(r))))
    return tuple(dict.fromkeys(keys))


def _loosen(pattern: str) -> str:
    """Spaces become \\s+ (several spaces, or a wrap); a leading ^ is dropped."""
    body = pattern[1:] if pattern.startswith("^") else pattern
    out, in_class, i = [], False, 0
    while i < len(body):
        ch = body[i]
        if ch == "\\" and i + 1 < len(body):
            out.append(body[i:i + 2])
            i += 2
            continue
        if ch == "[" and not in_class:
            in_class = True
        elif ch == "]" and in_class:
            in_class = False
        if ch == " " and not in_class:
            j = i
            while j < len(body) and body[j] == " ":
                j += 1
            if j < len(body) and body[j] in "+*?":
                j += 1
            out.append(r"\s+")
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    server_weight: dict[str, int]

    @classmethod
    def load(cls, path: Path | str = RULES_PATH) -> "RuleSet":
        """Read and compile a rules file; ValueError names a bad rule."""
        with open(path, "rb") as handle:
            doc = tomllib.load(handle)
        priorities: dict[str, int] = doc.get("classes", {})
        rules: list[Rule] = []
        weights: dict[str, int] = {}
        for entry in doc.get("rule", []):
            name = entry["class"]
            if name not in CLASSES:
                raise ValueError(f"rules: unknown class {name!r}")
            rules.append(_make_rule(len(rules), "class", name, entry,
                                    entry.get("priority", priorities.get(name, 0))))
        for entry in doc.get("server", []):
            weights[entry["name"]] = entry.get("weight", 1)
            rules.append(_make_rule(len(rules), "server", entry["name"], entry, entry.get("weight", 1)))
        return cls(tuple(rules), weights)


def _make_rule(index: int, kind: str, name: str, entry: dict, priority: int) -> Rule:
    pattern = entry["pattern"]
    try:
        # runs of spaces also match a line break or several spaces
        strict = re.compile(("^" if pattern.startswith("^") else "") + _loosen(pattern))
    except re.error as exc:
        raise ValueError(f"rules: bad pattern {pattern!r}: {exc}") from None
    keys = tuple(entry["keys"]) if "keys" in entry else _derive_keys(pattern)
    return Rule(index=index, kind=kind, name=name, pattern=pattern, priority=priority, keys=keys,
                summary=entry.get("summary", ""), weak=bool(entry.get("weak", False)),
                ready=bool(entry.get("ready", False)), anchored=pattern.startswith("^"),
                strict=strict)


_DEFAULT_RULES: RuleSet | None = None


def default_rules() -> RuleSet:
    global _DEFAULT_RULES
    if _DEFAULT_RULES is None:
        _DEFAULT_RULES = RuleSet.load()
    return _DEFAULT_RULES


@dataclass
class TriageResult:
    """The verdict on a log; `to_json()` is the stable CLI/JSON form."""

    cls: str
    line: int | None
    summary: str
    excerpt: list[str]
    server: str
    ready_seen: bool

    @property
    def crashed(self) -> bool:
        return self.cls in CRASH_CLASSES

    def to_json(self) -> dict:
        return {"class": self.cls, "line": self.line, "summary": self.summary,
                "excerpt": list(self.excerpt), "server": self.server, "ready_seen": self.ready_seen}


@dataclass
class _Hit:
    """The first line one rule matched, with the lines around it."""

    rule: Rule
    line: int
    text: str
    before: list[str]
    after: list[str]


class Triage:
    """Incremental classifier: feed lines as they arrive, ask for the verdict any time."""

    def __init__(self, rules: RuleSet | None = None):
        self.rules = rules or default_rules()
        self._pending = {rule.index for rule in self.rules.rules}
        self._hits: dict[int, _Hit] = {}
        self._filling: list[_Hit] = []  # hits still short of after-context
        self._recent: deque[str] = deque(maxlen=EXCERPT_BEFORE)
        self._lines = 0  # whole lines consumed so far
        self._partial = ""

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
        """A chunk of a log; a trailing partial line waits for the next chunk."""
        if self._partial:
            text = self._partial + text
            self._partial = ""
        cut = text.rfind("\n")
        if cut < 0:
            self._partial = text
            return
        if cut + 1 < len(text):
            self._partial = text[cut + 1:]
            text = text[:cut + 1]
        self._scan(text)

    def close(self) -> None:
        """The log ended: count a last line that had no newline."""
        if self._partial:
            tail, self._partial = self._partial, ""
            self._scan(tail + "\n")

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
        live = self._live_keys()
        heap = []
        for key in live:
            found = text.find(key)
            if found >= 0:
                heap.append((found, key))
        heapq.heapify(heap)
        counted, counted_line, last_examined = 0, base, -1
        while heap:
            found, key = heapq.heappop(heap)
            if not live.get(key):
                continue
            start = text.rfind("\n", 0, found) + 1
            first_end = text.find("\n", found)
            first_end = len(text) if first_end < 0 else first_end
            if start > last_examined:
                counted_line += text.count("\n", counted, start)
                counted = start
                if start > 0 and last_examined < (prev := text.rfind("\n", 0, start - 1) + 1):
                    # the line before may hold the start of a message wrapped onto this one
                    self._examine(text, prev, start - 1, counted_line, live)
                self._examine(text, start, first_end, counted_line + 1, live)
                last_examined = start
            if live.get(key):
                again = text.find(key, first_end + 1)
                if again >= 0:
                    heapq.heappush(heap, (again, key))
        self._lines = base + text.count("\n")
        self._remember_tail(text)

    def _examine(self, text: str, start: int, first_end: int, line_no: int,
                 live: dict[str, set[int]]) -> None:
        """Try the pending rules whose keys occur on this line (or the next,
        for a wrapped message); a match must start on this line to count."""
        stop = text.find("\n", first_end + 1) if first_end < len(text) else -1
        stop = len(text) if stop < 0 else stop
        raw_first = text[start:first_end]
        raw_both = text[start:stop]
        wanted = set()
        for key, indices in live.items():
            if indices and key in raw_both:
                wanted |= indices
        if not wanted:
            return
        first = clean_line(raw_first)
        rest = text[first_end + 1:stop] if stop > first_end else ""
        joined = first + " " + clean_line(rest).strip() if rest else first
        for index in sorted(wanted):
            if index not in self._pending:
                continue
            rule = self.rules.rules[index]
            found = rule.strict.search(first if rule.anchored else joined)
            if found and found.start() < max(len(first), 1):
                self._record(rule, text, start, stop, line_no, first)
                for key in rule.keys:
                    live.get(key, set()).discard(index)

    def _record(self, rule: Rule, text: str, start: int, stop: int, line_no: int, first: str) -> None:
        self._pending.discard(rule.index)
        before = _lines_before(text, start, EXCERPT_BEFORE)
        if len(before) < EXCERPT_BEFORE:
            before = list(self._recent)[-(EXCERPT_BEFORE - len(before)):] + before
        line_end = text.find("\n", start)
        after = _lines_after(text, line_end + 1, EXCERPT_AFTER)
        hit = _Hit(rule, line_no, first, [clean_line(b) for b in before], [clean_line(a) for a in after])
        self._hits[rule.index] = hit
        if len(hit.after) < EXCERPT_AFTER:
            self._filling.append(hit)

    def _fill_after(self, text: str) -> None:
        if not self._filling:
            return
        still: list[_Hit] = []
        for hit in self._filling:
            need = EXCERPT_AFTER - len(hit.after)
            hit.after.extend(clean_line(a) for a in _lines_after(text, 0, need))
            if len(hit.after) < EXCERPT_AFTER:
                still.append(hit)
        self._filling = still

    def _remember_tail(self, text: str) -> None:
        for line in _lines_before(text, len(text), EXCERPT_BEFORE):
            self._recent.append(line)

    # ---------------------------------------------------------------- verdict
    def result(self) -> TriageResult:
        hits = list(self._hits.values())
        class_hits = [h for h in hits if h.rule.kind == "class"]
        server = _pick_server([h for h in hits if h.rule.kind == "server"], self.rules.server_weight)
        ready_seen = any(h.rule.ready for h in class_hits)
        if not class_hits:
            return TriageResult("unknown", None, "no known failure or health signature in the log",
                                [], server, ready_seen)
        top = max(class_hits, key=lambda h: (h.rule.priority, -h.line))
        same = [h for h in class_hits if h.rule.name == top.rule.name]
        strong = [h for h in same if not h.rule.weak] or same
        decisive = min(strong, key=lambda h: h.line)
        summary = _summary(decisive, ready_seen)
        excerpt = [_trim(x) for x in decisive.before + [decisive.text] + decisive.after]
        return TriageResult(top.rule.name, decisive.line, summary, excerpt, server, ready_seen)


def _summary(hit: _Hit, ready_seen: bool) -> str:
    if hit.rule.name == "healthy":
        if ready_seen:
            return "server ready"
        if hit.rule.summary == "serving requests":
            return "server serving requests"
        return "server starting, not ready yet"
    detail = _trim(hit.text.strip(), 160)
    return f"{hit.rule.summary}: {detail}" if hit.rule.summary else detail


def _pick_server(hits: list[_Hit], weights: dict[str, int]) -> str:
    if not hits:
        return "unknown"
    best = max(hits, key=lambda h: (weights.get(h.rule.name, 0), -h.line))
    return best.rule.name


def _trim(text: str, width: int = EXCERPT_WIDTH) -> str:
    return text if len(text) <= width else text[: width - 1] + "…"


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


# -------------------------------------------------------------------- entry points
def classify(lines: Iterable[str], rules: RuleSet | None = None) -> TriageResult:
    """Verdict on a whole log given as lines."""
    triage = Triage(rules)
    triage.feed_lines(lines)
    triage.close()
    return triage.result()


def classify_text(text: str, rules: RuleSet | None = None) -> TriageResult:
    triage = Triage(rules)
    triage.feed_text(text)
    triage.close()
    return triage.result()


def classify_file(path: str | Path, rules: RuleSet | None = None, block: int = 1 << 22) -> TriageResult:
    """Verdict on a log file, read in blocks (undecodable bytes replaced)."""
    triage = Triage(rules)
    with open(path, "r", encoding="utf-8", errors="replace", newline="") as handle:
        while True:
            chunk = handle.read(block)
            if not chunk:
                break
            triage.feed_text(chunk.replace("\r\n", "\n"))
    triage.close()
    return triage.result()
