"""Derived launch scripts: a base script with exactly some flags changed.

The server command is found with the launch-script parser the Server tab
uses; each flag's value is replaced where the script sets it, or the flag is
added right after the server command when it does not. The result is parsed
again and must carry every requested value, else the derivation is refused:
a grid cell never runs a script that is not what it claims.
"""
from __future__ import annotations

import re
import shlex
from typing import Any

from ..servers import launch
from .flag_names import key, same_setting, spellings


class GridError(ValueError):
    """A derived script could not be written as asked."""


def value_text(value: Any) -> str:
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    return str(value)


def cell_name(base: str, flags: dict[str, Any]) -> str:
    """`run_tp8+cuda-graph-max-bs=32+max-running-requests=256`: what the cell is, readable and file-safe."""
    parts = [f"{name.lstrip('-')}={re.sub(r'[^A-Za-z0-9._-]', '_', value_text(v))}" for name, v in flags.items()]
    return "+".join([base, *parts])


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
    lines = text.splitlines()
    start, end = _server_block(lines)
    server = launch.parse_script("\n".join(lines[:end + 1]) + "\n").server
    for a, b in same_setting(list(flags), server):
        raise GridError(f"{a} and {b} are one setting to {server}: give it once")
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
