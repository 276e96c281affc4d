"""The dtype a server loads the weights in, which is what a decode step reads, not always the checkpoint's.

vLLM and sglang under `--dtype auto` (their default) load a float32
checkpoint in 16 bits: the bytes per token are half the file's. A launch
script's `--dtype` overrides both. The answer always says which rule gave it.
"""
from __future__ import annotations

from .errors import RooflineError

# --dtype values as vLLM / sglang spell them, as config dtype names.
_FLAG = {"auto": None, "half": "float16", "float16": "float16", "fp16": "float16", "bfloat16": "bfloat16",
         "bf16": "bfloat16", "float": "float32", "float32": "float32", "fp32": "float32"}


def served_dtype(checkpoint_dtype: str, flag: str | None) -> tuple[str, str]:
    """(dtype the weights are served in, why) for a checkpoint dtype and a launch `--dtype` (None: auto)."""
    if flag is not None:
        key = str(flag).strip().lower()
        if key not in _FLAG:
            raise RooflineError(f"--dtype {flag!r} is not a dtype the roofline knows ({', '.join(sorted(_FLAG))})")
        if _FLAG[key] is not None:
            return _FLAG[key], f"--dtype {flag}"
    if checkpoint_dtype == "float32":
        # vLLM's and sglang's auto rule: a float32 checkpoint is loaded in 16 bits
        return "bfloat16", "--dtype auto loads a float32 checkpoint in 16 bits"
    return checkpoint_dtype, "config" if flag is None else f"--dtype {flag} (the checkpoint's dtype)"
