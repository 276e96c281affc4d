"""The one-shot reading's remote command: the process list and the GPU stream started together.

nvidia-smi answers one selective query per run (`--query-gpu` or
`--query-compute-apps`, never both), and the one form that carries both
(`nvidia-smi -q`) costs many times a CSV query. So a one-shot reading runs
the two CSV queries in one session, at the same time: the host pays the
longer of the two starts, not their sum (on a host without persistence
mode each start also brings the GPUs up, and two at once share that).

The output keeps the order the sampler reads: the process list, the
`APPS_END` line, then the GPU stream as nvidia-smi writes it (it waits in a
pipe while the list is read), then `SMI_EXIT <status>` when it ends. The
session's own status is the pass-through's, so the GPU query's status comes
in that last line. A TERM (the stream closed) ends every process of the
session's group: the session was started in a group of its own (sshd's
`setsid`, `LocalHost`'s new session), so nothing else is in it.
"""
from __future__ import annotations

import re
import shlex
from typing import Sequence

APPS_END = "--gpudeck-apps-end--"   # ends the process list at the head of the output
SMI_EXIT = "--gpudeck-smi-exit"     # then: the GPU query's exit status, when it ended by itself
_EXIT_LINE = re.compile(rf"^{SMI_EXIT} ([0-9]{{1,3}})$")


def command(apps: Sequence[str], gpus: Sequence[str]) -> list[str]:
    """`sh -c` running both queries at once, the process list first in what it prints."""
    script = (
        "trap 'trap - TERM; kill 0' TERM\n"
        f"{{ {shlex.join(gpus)}; echo \"{SMI_EXIT} $?\"; }} | "
        f"{{ a=$({shlex.join(apps)}); [ -z \"$a\" ] || printf '%s\\n' \"$a\"; echo {APPS_END}; exec cat; }} &\n"
        "wait $!\n"
    )
    return ["sh", "-c", script]


def exit_status(line: str) -> int | None:
    """The GPU query's status from its `SMI_EXIT` line; None for any other line."""
    found = _EXIT_LINE.match(line.strip())
    return int(found.group(1)) if found else None
