"""nvidia-smi's failure texts, each mapped to a host state.

The order matters: "Unable to determine the device handle for GPU …: GPU is
lost" is a lost GPU, not a generic device error.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Sequence

from .model import GPU_ERROR, GPU_LOST, NO_DEVICES, NO_DRIVER

_RULES: list[tuple[str, re.Pattern]] = [
    (GPU_LOST, re.compile(r"GPU is lost|GPU has fallen off the bus", re.I)),
    (NO_DRIVER, re.compile(
        r"couldn'?t communicate with the NVIDIA driver"
        r"|Failed to initialize NVML"
        r"|Driver/library version mismatch"
        r"|NVML library version"
        r"|NVIDIA-SMI has failed"
        r"|libnvidia-ml\.so.*(?:not found|cannot open)"
        r"|nvidia-smi: (?:command )?not found"
        r"|command not found: \S*nvidia-smi"
        r"|nvidia-smi: No such file or directory", re.I)),
    (NO_DEVICES, re.compile(r"No devices were found", re.I)),
    (GPU_ERROR, re.compile(
        r"Unable to determine the device handle"
        r"|GPU requires reset"
        r"|Unknown Error", re.I)),
]


NOT_FOUND = "nvidia-smi not found on PATH"  # the words `profiles check` and the GPUs tab share
# what a shell prints when the command is not there: "sh: 2: eval: nvidia-smi: not found",
# "bash: nvidia-smi: command not found", "zsh: command not found: nvidia-smi"
_SHELL_NOT_FOUND = re.compile(r"nvidia-smi: (?:command )?not found|command not found: \S*nvidia-smi"
                              r"|nvidia-smi: No such file or directory", re.I)


def not_found_message(host: str) -> str:
    return f"{NOT_FOUND} of {host}"


def smi_missing(returncode: int | None, stderr_lines: Sequence[str]) -> bool:
    """True when nvidia-smi itself is absent (exit 127 or a shell's not-found line), not failing."""
    return returncode == 127 or any(_SHELL_NOT_FOUND.search(line) for line in stderr_lines)


@dataclass
class ErrorMatch:
    state: str
    message: str


def recognise(lines: Sequence[str]) -> ErrorMatch | None:
    """The first rule (in priority order) that any line matches, with that line as message.

    A console-wrapped continuation (the next line, indented further and not
    starting a new sentence of its own) is joined onto the message.
    """
    cleaned = [line.rstrip() for line in lines]
    for state, pattern in _RULES:
        for i, line in enumerate(cleaned):
            if pattern.search(line):
                message = line.strip()
                if i + 1 < len(cleaned):
                    nxt = cleaned[i + 1]
                    indent = len(line) - len(line.lstrip())
                    nxt_indent = len(nxt) - len(nxt.lstrip())
                    if nxt.strip() and nxt_indent > indent and nxt.strip()[0].islower():
                        message += " " + nxt.strip()
                return ErrorMatch(state, " ".join(message.split()))
    return None
