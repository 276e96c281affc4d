"""A small vocabulary of what an error message means, whatever server printed it.

A class is read from the structure of a log (a traceback's final exception,
a fatal `Error:` line, a runtime error) plus the meaning of its message, not
from a whole phrase per server: "NPU out of memory", "HIP out of memory",
"Free memory on device ... is less than desired GPU memory utilization" and
"No available memory for the cache blocks" all mean one thing. Memory sizing
said in words at start is an OOM. The order matters: the first meaning that
matches wins (an NCCL error about memory is NCCL's).
"""
from __future__ import annotations

import re

MEANINGS: tuple[tuple[str, re.Pattern[str]], ...] = (
    ("cuda-illegal-address", re.compile(
        r"illegal (memory access|address|instruction was encountered)|misaligned address|"
        r"unspecified launch failure|device-side assert|memory access fault|page fault", re.I)),
    ("nccl", re.compile(r"\bNCCL\b|\bnccl[A-Z]|collective operation|process group|\bc10d\b|\bgloo\b", re.I)),
    ("oom", re.compile(
        r"out of memory|OutOfMemory|\bOOM\b|not enough memory|no available memory|insufficient (GPU |device )?"
        r"memory|memory (is )?insufficient|less than desired GPU memory utilization|"
        r"can be stored in KV cache|larger than the available KV cache|KV cache (pool )?(is )?(full|exhausted)|"
        r"(cannot|failed to|unable to) allocate (memory|[0-9.]+ ?[KMGT]i?B|[A-Za-z0-9_ ]*buffer)|"
        r"exceeds? (the )?(available|free) memory", re.I)),
    ("port-in-use", re.compile(r"address already in use|EADDRINUSE|port [0-9]+ is (already )?in use|"
                               r"(could ?n.t|failed to|unable to) bind", re.I)),
    ("model-load", re.compile(
        r"model (name|path|id|file|weights|architecture|config)|failed to load (the )?model|"
        r"(unable|could not|can ?not) (load|find|open) (the )?(model|weights|tokenizer|checkpoint)|"
        r"tokenizer|safetensors|\.gguf|checkpoint|undefined symbol|failed to import|"
        r"no such file or directory", re.I)),
)


def meaning_of(message: str) -> str | None:
    """The class an error message means, or None when it names none of the vocabulary."""
    for cls, pattern in MEANINGS:
        if pattern.search(message):
            return cls
    return None
