"""Every name a server accepts for one flag: `-c` and `--ctx-size` are one setting to llama.cpp.

A grid may name a flag one way while the base script spells it another; the
derived script must change the script's own spelling in place, never add a
second spelling beside it (the server would then see both, and keep one).
"""
from __future__ import annotations

# One tuple per flag: all its spellings, as written on the command line.
ALIASES: dict[str, tuple[tuple[str, ...], ...]] = {
    "llama.cpp": (
        ("-c", "--ctx-size"), ("-t", "--threads"), ("-tb", "--threads-batch"), ("-np", "--parallel"),
        ("-ngl", "--gpu-layers", "--n-gpu-layers"), ("-b", "--batch-size"), ("-ub", "--ubatch-size"),
        ("-m", "--model"), ("-fa", "--flash-attn"), ("-ctk", "--cache-type-k"), ("-ctv", "--cache-type-v"),
        ("-sm", "--split-mode"), ("-ts", "--tensor-split"), ("-mg", "--main-gpu"), ("-cb", "--cont-batching"),
        ("-n", "--n-predict", "--predict"), ("-a", "--alias"), ("-dev", "--device"),
    ),
    "sglang": (
        ("--tp", "--tp-size", "--tensor-parallel-size"), ("--ep", "--ep-size", "--expert-parallel-size"),
        ("--dp", "--dp-size", "--data-parallel-size"), ("--pp-size", "--pipeline-parallel-size"),
        ("--model-path", "--model"),
    ),
    "vllm": (
        ("-tp", "--tensor-parallel-size"), ("-pp", "--pipeline-parallel-size"), ("-dp", "--data-parallel-size"),
        ("-q", "--quantization"),
    ),
    "trtllm": (),
}


def spellings(flag: str, server: str | None) -> tuple[str, ...]:
    """Every spelling of `flag` the server accepts, the one given first (just itself when none is known)."""
    norm = _norm(flag)
    for group in ALIASES.get(server or "", ()):
        if norm in {_norm(name) for name in group}:
            return (flag, *(name for name in group if _norm(name) != norm))
    return (flag,)


def _norm(flag: str) -> str:
    """`--ctx_size` and `--ctx-size` are one name (parsers treat _ and - alike in long flags)."""
    return flag.replace("_", "-") if flag.startswith("--") else flag


def key(flag: str) -> str:
    """The name as the launch-script parser keys it in raw_flags: no dashes in front, `_` as `-`."""
    return flag.lstrip("-").replace("_", "-")


def same_setting(flags: list[str], server: str | None) -> list[tuple[str, str]]:
    """Pairs of grid flags that are one setting under two names (a contradiction waiting to happen)."""
    out = []
    for i, a in enumerate(flags):
        names = {_norm(n) for n in spellings(a, server)}
        out += [(a, b) for b in flags[i + 1:] if _norm(b) in names]
    return out
