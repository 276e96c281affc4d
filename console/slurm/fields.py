"""`scontrol show ... -o` one-line records read as key=value pairs.

Values may hold spaces (`OS=Linux 6.1 #1 SMP`), so a key starts only where a
word followed by `=` starts after a space. A node's free-text `Reason=` is the
last field and is taken whole. Bounded: a line past MAX_LINE is cut.
"""
from __future__ import annotations

import re

MAX_LINE = 64 * 1024
MAX_GPUS_PER_NODE = 1024   # far past any machine built; a larger gres count is junk
_COUNT = re.compile(r"[0-9]{1,12}")
_DIGITS = re.compile(r"[0-9]+")
_PARENS = re.compile(r"\([^()]*\)")
_KEY = re.compile(r"(?:^|(?<=\s))([A-Za-z_][A-Za-z0-9_/:.]*)=")


def parse_record(line: str, free_text_last: str | None = None, repeated: set[str] | None = None) -> dict[str, str]:
    """`Key=value Key2=a b c` -> {'Key': 'value', 'Key2': 'a b c'}; `free_text_last`
    names a key whose value runs to the end of the line whatever it holds. The first of a
    repeated key wins; `repeated` collects such keys (a job name can hold ` UserId=root(0)`)."""
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
        if m.group(1) in fields and repeated is not None:
            repeated.add(m.group(1))
        fields.setdefault(m.group(1), line[m.end():end].strip())
    if free_text_last and tail is not None:  # a tail is only cut at that key
        fields[free_text_last] = tail
    return fields


def null(value: str | None) -> str | None:
    """Slurm's empty markers read as None."""
    if value is None or value.strip() in ("", "(null)", "N/A", "None", "n/a", "n/s"):
        return None
    return value.strip()


def count(value: str | None, most: int) -> int | None:
    """A count Slurm printed, in ASCII digits and at most `most`; None otherwise (junk, or past any
    plausible size: 10^26 GPUs is no fact to show). `str.isdigit` also takes '²', which int() refuses."""
    value = null(value)
    if value is None or not _COUNT.fullmatch(value):
        return None
    number = int(value)
    return number if number <= most else None


def _gres_parts(value: str) -> list[str]:
    """`gpu:a:2(S:0-1),shard:8` -> ['gpu:a:2', 'shard:8']: parenthesised parts dropped, then split at
    commas; linear (a regex lookahead per comma was quadratic in the string's length)."""
    return [part.strip() for part in _PARENS.sub("", value).split(",")]


def gres_gpus(value: str | None, most: int = MAX_GPUS_PER_NODE) -> int | None:
    """GPUs in a gres string: `gpu:4`, `gpu:h100:8(S:0-1)`, `gpu:a100:2,shard:8` -> count; None if
    unknown, or if a count (or the total) is past `most`."""
    value = null(value)
    if value is None:
        return None
    total, seen = 0, False
    for part in _gres_parts(value):
        bits = part.split(":")
        if bits[0] != "gpu":
            continue
        if len(bits) == 1:
            total += 1
        elif _DIGITS.fullmatch(bits[-1]):
            number = count(bits[-1], most)
            if number is None:
                return None
            total += number
        else:
            continue
        seen = True
        if total > most:
            return None
    return total if seen else 0


def exit_code(value: str | None) -> tuple[int | None, int | None]:
    """Slurm's `ExitCode=A:B` -> (exit status A, signal B); (None, None) if unreadable."""
    value = null(value)
    if not value or ":" not in value:
        return None, None
    a, _, b = value.partition(":")
    status, signal = count(a, 255), count(b, 255)
    if status is None or signal is None:
        return None, None
    return status, signal
