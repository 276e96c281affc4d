"""The rules file, read and compiled: failure signatures, lifecycle signs, server markers.

Every rule is a regular expression (the subset Python and `grep -E` share)
plus the literal keys that any line it matches must hold; the scanner finds
candidate lines by those keys and runs the expression only there.
"""
from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

RULES_PATH = Path(__file__).with_name("rules.toml")

# Classes named for a signal: what the process's end shows when the log names no cause.
SIGNAL_CLASSES = ("segfault", "abort", "bus-error", "illegal-instruction", "fpe")
CLASSES = (
    "gpu-fault", "cuda-illegal-address", "oom", "nccl", "process-killed", "port-in-use",
    "model-load", "hang", "engine-dead", "python-exception", *SIGNAL_CLASSES,
    "request-error", "healthy", "unknown",
)
# request-error: a request failed and the server went on serving; not a crash.
# gpu-fault: the driver reported the GPU lost or broken (Xid 79, 48, 119, 120; see driver.py).
CRASH_CLASSES = frozenset(CLASSES) - {"healthy", "unknown", "request-error"}
# Names a class had before; saved records that use them are read under today's name.
# `oom` was `cuda-oom` until ROCm and CPU memory joined it.
RENAMED = {"cuda-oom": "oom"}


def current_class(name: str) -> str:
    return RENAMED.get(name, name)


# Root causes: a class that says why, not only that, the server died. A signal
# or the engine's death after one of these is its consequence.
CAUSES = frozenset({"gpu-fault", "cuda-illegal-address", "oom", "nccl", "port-in-use", "model-load", "hang"})
STATES = ("loading", "ready", "serving", "stopped", "crashed", "hung", "unknown")
SERVERS = ("sglang", "vllm", "llama.cpp", "ollama", "tgi", "trtllm", "lmdeploy", "unknown")

# What a non-class line tells about the server's lifecycle.
#   start    a new run of the server begins (its banner or arguments)
#   loading  weights, KV cache, CUDA graphs: on the way up
#   ready    the server says it accepts requests
#   serving  it answered requests or reports throughput
#   stopped  an orderly shutdown
#   error    an ERROR/CRITICAL-level line (not healthy after ready)
#   http500  a request answered with 500
#   exit     the process ended with a failure status
#   frame    a Python traceback frame (`File "...", line N, in func`)
#   exception the final line of a Python traceback (`SomeError: message`)
SIGNS = ("start", "loading", "ready", "serving", "stopped", "error", "http500",
         "exit", "frame", "exception")
# Signs looked for once per run of the server (the first one tells all);
# the others are looked for on every line, as their order matters.
ONCE_SIGNS = frozenset({"loading", "ready", "serving"})

@dataclass(frozen=True)
class Rule:
    """One failure (or health) signature from the rules file."""

    index: int
    kind: str  # "class", "sign" or "server"
    name: str  # the class, the sign, or the server name
    pattern: str  # as written in the rules file (grep -E compatible)
    priority: int
    strict: re.Pattern[str] = field(compare=False)  # on a cleaned line
    summary: str = ""
    weak: bool = False
    anchored: bool = False
    keys: tuple[str, ...] = ()  # literals one of which every matching line holds
    # a notice: a failure line a server can live through (a slow start, one failed request);
    # the scanner looks again for requests answered after it, and a later phase overrides it
    notice: bool = False
    resumes: bool = False  # a serving sign that proves requests were answered (not a metrics line)


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
    runs: list[str] = []
    current: list[str] = []
    i, depth = 0, 0
    text = alternative.lstrip("^")

    def flush() -> None:
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
            optional = j < len(body) and body[j] in "*?"
            if j < len(body) and body[j] in "+*?":
                j += 1
            out.append(r"\s*" if optional else r"\s+")
            i = j
            continue
        out.append(ch)
        i += 1
    return "".join(out)


@dataclass(frozen=True)
class RuleSet:
    rules: tuple[Rule, ...]
    server_weight: dict[str, int]
    priority: dict[str, int] = field(default_factory=dict)
    frame_class: dict[str, str] = field(default_factory=dict)  # deepest frame's function -> class
    exception_class: dict[str, str] = field(default_factory=dict)  # exception type -> class

    @classmethod
    def load(cls, path: Path | str = RULES_PATH) -> "RuleSet":
        """Read and compile a rules file; ValueError names a bad rule."""
        with open(path, "rb") as handle:
            doc = tomllib.load(handle)
        priorities: dict[str, int] = {current_class(k): v for k, v in doc.get("classes", {}).items()}
        rules: list[Rule] = []
        weights: dict[str, int] = {}
        for entry in doc.get("rule", []):
            if "sign" in entry:
                if entry["sign"] not in SIGNS:
                    raise ValueError(f"rules: unknown sign {entry['sign']!r}")
                rules.append(_make_rule(len(rules), "sign", entry["sign"], entry, 0))
                continue
            name = current_class(entry["class"])
            if name not in CRASH_CLASSES:
                raise ValueError(f"rules: unknown class {name!r}")
            rules.append(_make_rule(len(rules), "class", name, entry,
                                    entry.get("priority", priorities.get(name, 0))))
        for entry in doc.get("server", []):
            weights[entry["name"]] = entry.get("weight", 1)
            rules.append(_make_rule(len(rules), "server", entry["name"], entry, entry.get("weight", 1)))
        frames = {}
        for entry in doc.get("frame", []):
            if current_class(entry["class"]) not in CRASH_CLASSES:
                raise ValueError(f"rules: unknown class {entry['class']!r} for frame")
            for function in entry["functions"]:
                frames[function] = current_class(entry["class"])
        exceptions = {}
        for entry in doc.get("exception", []):
            if current_class(entry["class"]) not in CRASH_CLASSES:
                raise ValueError(f"rules: unknown class {entry['class']!r} for exception")
            for name in entry["types"]:
                exceptions[name] = current_class(entry["class"])
        return cls(tuple(rules), weights, priorities, frames, exceptions)


def _make_rule(index: int, kind: str, name: str, entry: dict[str, Any], priority: int) -> Rule:
    pattern = entry["pattern"]
    try:
        # runs of spaces also match a line break or several spaces
        strict = re.compile(("^" if pattern.startswith("^") else "") + _loosen(pattern))
    except re.error as exc:
        raise ValueError(f"rules: bad pattern {pattern!r}: {exc}") from None
    keys = tuple(entry["keys"]) if "keys" in entry else _derive_keys(pattern)
    return Rule(index=index, kind=kind, name=name, pattern=pattern, priority=priority, keys=keys,
                summary=entry.get("summary", ""), weak=bool(entry.get("weak", False)),
                notice=bool(entry.get("notice", False)), resumes=bool(entry.get("resumes", False)),
                anchored=pattern.startswith("^"), strict=strict)


_DEFAULT_RULES: RuleSet | None = None


def default_rules() -> RuleSet:
    global _DEFAULT_RULES
    if _DEFAULT_RULES is None:
        _DEFAULT_RULES = RuleSet.load()
    return _DEFAULT_RULES


