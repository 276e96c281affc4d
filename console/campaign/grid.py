"""Derived launch scripts: a base script with exactly some flags changed.

The server command is found with the launch-script parser the Server tab
uses; each flag's value is replaced where the script sets it, or the flag is
added right after the server command when it does not. The result is parsed
again and must carry every requested value, else the derivation is refused:
a grid cell never runs a script that is not what it claims.

Values are shell-quoted, which protects them only where the shell reads the
command once. Where the server command sits in an unquoted heredoc, a
here-string, an `eval` or a `sh -c` string, the shell reads it a second time,
so there only plain values (`[A-Za-z0-9._:/=,+-]+`) are written, and any
other value is refused, saying why.
"""
from __future__ import annotations

import re
import shlex
from typing import Any

from ..servers import launch
from .flag_names import key, same_setting, spellings


class GridError(ValueError):
    """A derived script could not be written as asked."""


PLAIN_VALUE = re.compile(r"[A-Za-z0-9._:/=,+-]+")
_HEREDOC = re.compile(r"<<-?[ \t]*(?P<q>['\"]?)\\?(?P<word>[A-Za-z_][A-Za-z0-9_]*)(?P=q)")
_REREAD = [(re.compile(r"<<<"), "a here-string (<<<)"),
           (re.compile(r"(?:^|[\s;&|(`])eval(?:\s|$)"), "an eval"),
           (re.compile(r"(?:^|[\s;&|(`/])(?:ba|da|z|k|c|tc)?sh\s+(?:-[A-Za-z]+\s+)*-[A-Za-z]*c\b"), "a `sh -c` string")]


def value_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def cell_name(base: str, flags: dict[str, Any]) -> str:
    """`run_tp8+cuda-graph-max-bs=32+max-running-requests=256`: what the cell is, readable and file-safe."""
    parts = [f"{name.lstrip('-')}={re.sub(r'[^A-Za-z0-9._-]', '_', value_text(v))}" for name, v in flags.items()]
    return "+".join([base, *parts])


def reread_context(lines: list[str], start: int, end: int) -> str | None:
    """Why the shell would read the server command twice (so quoting alone would not hold), or None."""
    open_doc: tuple[str, bool, bool] | None = None      # (delimiter, strip tabs, expands)
    for number, line in enumerate(lines[:end + 1]):
        if open_doc is not None:
            word, tabs, expands = open_doc
            if (line.lstrip("\t") if tabs else line) == word:
                open_doc = None
            elif number >= start and expands:
                return f"the server command sits in an unquoted heredoc (<<{word})"
            continue
        found = _HEREDOC.search(line)
        if found:
            quoted = bool(found.group("q")) or "\\" in found.group(0)
            open_doc = (found.group("word"), found.group(0).startswith("<<-"), not quoted)
    block = "\n".join(lines[start:end + 1])
    for pattern, what in _REREAD:
        if pattern.search(block):
            return f"the server command is inside {what}"
    return None


def _server_block(lines: list[str]) -> tuple[int, int]:
    """First and last physical line of the logical line that runs the server.

    Parsed with everything above it, so variables the script sets (`BIN=...`) are known."""
    start = 0
    while start < len(lines):
        end = start
        while end < len(lines) - 1 and lines[end].rstrip().endswith("\\"):
            end += 1
        try:
            launch.parse_script("\n".join(lines[:end + 1]) + "\n")
            return start, end
        except launch.LaunchConfigError:
            start = end + 1
    raise GridError("no sglang, vLLM, llama.cpp or TensorRT-LLM command found in the base script")


def _command_end(block: str) -> int:
    """Where the command's arguments end: before a comment, redirection, `&`, `|` or `;` outside quotes."""
    quote = None
    i = 0
    while i < len(block):
        c = block[i]
        if quote:
            if c == quote:
                quote = None
        elif c in "'\"":
            quote = c
        elif c == "\\":
            i += 1
        elif c in "#" and (i == 0 or block[i - 1].isspace()):
            break
        elif c in ">|;&" or (c in "12" and block[i + 1:i + 2] == ">" and (i == 0 or block[i - 1].isspace())):
            break
        i += 1
    end = i
    while end > 0 and block[end - 1] in " \t\\\n":
        end -= 1
    return end


def _set_one(block: str, names: tuple[str, ...], value: str) -> str:
    """Set the flag, under whichever of its names the script uses, to `value`; add it (first name) if absent."""
    quoted = shlex.quote(value)
    found = []
    for flag in names:
        # --flag=value, --flag value, with the value bare or quoted
        pattern = re.compile(r"(?P<lead>(?:^|[\s]))" + re.escape(flag) +
                             r"(?P<sep>=|[ \t]+(?:\\\n[ \t]*)?)(?P<value>\"[^\"]*\"|'[^']*'|[^\s\\;&|]+)")
        found += [(flag, m) for m in pattern.finditer(block)]
    written = {(flag, m.group("value").strip("'\"")) for flag, m in found}
    if len({v for _f, v in written}) > 1:
        said = " and ".join(f"{f} {v}" for f, v in sorted(written))
        raise GridError(f"the base script sets {said}: one setting, given differently; fix the script first")
    if found:   # every place the script sets it, whatever the spelling, gets the new value
        for _flag, m in sorted(found, key=lambda fm: fm[1].start("value"), reverse=True):
            block = block[:m.start("value")] + quoted + block[m.end("value"):]
        return block
    # not set: append it to the server's arguments (argument parsers take flags in any order)
    at = _command_end(block)
    return block[:at] + f" {names[0]} {quoted}" + block[at:]


def derive(text: str, flags: dict[str, Any]) -> str:
    """The base script's text with each flag set to its value; GridError if that can't be made true.

    A flag is matched by every name the server accepts (`-c` is `--ctx-size` to llama.cpp)."""
    from .spec import FLAG_NAME, known_flags

    for flag in flags:      # checked when the file was read; checked again before it becomes script text
        if not isinstance(flag, str) or not (FLAG_NAME.fullmatch(flag) or flag in known_flags()):
            raise GridError(f"refused flag name {flag!r}: not a server flag (lower-case letters, digits, '-' and '.')")
    lines = text.splitlines()
    start, end = _server_block(lines)
    server = launch.parse_script("\n".join(lines[:end + 1]) + "\n").server
    for a, b in same_setting(list(flags), server):
        raise GridError(f"{a} and {b} are one setting to {server}: give it once")
    reread = reread_context(lines, start, end)
    if reread:
        for flag, value in flags.items():
            if not PLAIN_VALUE.fullmatch(value_text(value)):
                raise GridError(f"{reread}, where the shell reads it twice: {flag} {value_text(value)!r} "
                                "would be read as shell code; only values of letters, digits and ._:/=,+- "
                                "can be set there")
    block = "\n".join(lines[start:end + 1])
    for flag, value in flags.items():
        block = _set_one(block, spellings(flag, server), value_text(value))
    out = "\n".join([*lines[:start], *block.split("\n"), *lines[end + 1:]]) + ("\n" if text.endswith("\n") else "")
    parsed = launch.parse_script(out)
    for flag, value in flags.items():
        got = [parsed.raw_flags[key(n)] for n in spellings(flag, server) if key(n) in parsed.raw_flags]
        if not got or any(str(g) != value_text(value) for g in got):
            raise GridError(f"could not set {flag} to {value_text(value)} (the script then says {got or None!r})")
    return out
