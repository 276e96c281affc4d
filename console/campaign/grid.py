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


def _set_one(block: str, flag: str, value: str) -> str:
    quoted = shlex.quote(value)
    # --flag=value, --flag value, with the value bare or quoted
    pattern = re.compile(r"(?P<lead>(?:^|[\s]))" + re.escape(flag) +
                         r"(?P<sep>=|[ \t]+(?:\\\n[ \t]*)?)(?P<value>\"[^\"]*\"|'[^']*'|[^\s\\;&|]+)")
    found = list(pattern.finditer(block))
    if found:
        m = found[-1]              # the last occurrence is the one the server sees
        return block[:m.start("value")] + quoted + block[m.end("value"):]
    # not set: append it to the server's arguments (argument parsers take flags in any order)
    at = _command_end(block)
    return block[:at] + f" {flag} {quoted}" + block[at:]


def derive(text: str, flags: dict[str, Any]) -> str:
    """The base script's text with each `--flag` set to its value; GridError if that can't be made true."""
    lines = text.splitlines()
    start, end = _server_block(lines)
    block = "\n".join(lines[start:end + 1])
    for flag, value in flags.items():
        block = _set_one(block, flag, value_text(value))
    out = "\n".join([*lines[:start], *block.split("\n"), *lines[end + 1:]]) + ("\n" if text.endswith("\n") else "")
    parsed = launch.parse_script(out)
    for flag, value in flags.items():
        got = parsed.raw_flags.get(flag.lstrip("-").replace("_", "-"))
        if got is None or str(got) != value_text(value):
            raise GridError(f"could not set {flag} to {value_text(value)} (the script then says {got!r})")
    return out
