"""`scontrol show ... -o` one-line records read as key=value pairs.

Values may hold spaces (`OS=Linux 6.1 #1 SMP`), so a key starts only where a
word followed by `=` starts after a space. A node's free-text `Reason=` is the
last field and is taken whole. Bounded: a line past MAX_LINE is cut.
"""
from __future__ import annotations

import re

MAX_LINE = 64 * 1024
_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z_][A-Za-z0-9_/:.]*)=")


def parse_record(line: str, free_text_last: str | None = None) -> dict[str, str]:
    """`Key=value Key2=a b c` -> {'Key': 'value', 'Key2': 'a b c'}; `free_text_last`
    names a key whose value runs to the end of the line whatever it holds."""
    line = line[:MAX_LINE].rstrip("\n")
    tail: str | None = None
    if free_text_last:
        marker = f" {free_text_last}="
        at = line.find(marker)
        if at >= 0:
            tail = line[at + len(marker):].strip()
            line = line[:at]
    fields: dict[str, str] = {}
    matches = list(_KEY.finditer(line))
    for i, m in enumerate(matches):
        end = matches[i + 1].start() if i + 1 < len(matches) else len(line)
        fields.setdefault(m.group(1), line[m.end():end].strip())
    if tail is not None:
        fields[free_text_last] = tail
    return fields


def null(value: str | None) -> str | None:
    """Slurm's empty markers read as None."""
    if value is None or value.strip() in ("", "(null)", "N/A", "None", "n/a", "n/s"):
        return None
    return value.strip()


def gres_gpus(value: str | None) -> int | None:
    """GPUs in a gres string: `gpu:4`, `gpu:h100:8(S:0-1)`, `gpu:a100:2,shard:8` -> count; None if unknown."""
    value = null(value)
    if value is None:
        return None
    total, seen = 0, False
    for part in re.split(r",(?![^()]*\))", value):
        part = re.sub(r"\(.*?\)", "", part).strip()
        bits = part.split(":")
        if bits[0] != "gpu":
            continue
        if len(bits) >= 2 and bits[-1].isdigit():
            total += int(bits[-1])
            seen = True
        elif len(bits) == 1:
            total += 1
            seen = True
    return total if seen else 0


def exit_code(value: str | None) -> tuple[int | None, int | None]:
    """Slurm's `ExitCode=A:B` -> (exit status A, signal B); (None, None) if unreadable."""
    value = null(value)
    if not value or ":" not in value:
        return None, None
    a, _, b = value.partition(":")
    if not (a.isdigit() and b.isdigit()):
        return None, None
    return int(a), int(b)
