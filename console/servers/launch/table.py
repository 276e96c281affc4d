"""The one table of launch flags: which flags matter, how each server spells them, and how
two tables are compared (config against config, script against what the server really runs).

Configs of different servers (sglang, vLLM, llama.cpp, TensorRT-LLM) land in the
same rows, so they can be shown and diffed side by side. Unknown stays None and
is printed `N/A`, never 0.
"""
from __future__ import annotations

import math
from typing import Any
from dataclasses import dataclass, field

from ...fmt import UNKNOWN

# The flags that matter, in display order, with their labels.
FLAG_KEYS: tuple[tuple[str, str], ...] = (
    ("model", "model"),
    ("tp", "tensor parallel"),
    ("ep", "expert parallel"),
    ("dp", "data parallel"),
    ("pp", "pipeline parallel"),
    ("mem_fraction", "memory fraction"),
    ("max_running", "max running requests"),
    ("context_length", "context length"),
    ("quantization", "quantization"),
    ("kv_dtype", "KV cache dtype"),
    ("moe_backend", "MoE backend"),
    ("attention_backend", "attention backend"),
    ("cuda_graph", "CUDA graphs"),
    ("host", "host"),
    ("port", "port"),
)
KEYS = tuple(key for key, _ in FLAG_KEYS)

# Command-line flag -> table key, per server. Flags are matched with
# underscores and dashes treated alike.
FLAGS = {
    "sglang": {
        "model-path": "model", "model": "model",
        "tp-size": "tp", "tp": "tp", "tensor-parallel-size": "tp",
        "ep-size": "ep", "ep": "ep", "expert-parallel-size": "ep",
        "dp-size": "dp", "dp": "dp", "data-parallel-size": "dp",
        "pp-size": "pp", "pipeline-parallel-size": "pp",
        "mem-fraction-static": "mem_fraction",
        "max-running-requests": "max_running",
        "context-length": "context_length",
        "quantization": "quantization",
        "kv-cache-dtype": "kv_dtype",
        "moe-runner-backend": "moe_backend", "moe-a2a-backend": "moe_backend",
        "attention-backend": "attention_backend",
        "host": "host", "port": "port",
    },
    "vllm": {
        "model": "model",
        "tensor-parallel-size": "tp", "tp": "tp",
        "data-parallel-size": "dp", "dp": "dp",
        "pipeline-parallel-size": "pp", "pp": "pp",
        "gpu-memory-utilization": "mem_fraction",
        "max-num-seqs": "max_running",
        "max-model-len": "context_length",
        "quantization": "quantization", "q": "quantization",
        "kv-cache-dtype": "kv_dtype",
        "all2all-backend": "moe_backend",
        "attention-backend": "attention_backend",
        "host": "host", "port": "port",
    },
    "llama.cpp": {
        "m": "model", "model": "model",
        "c": "context_length", "ctx-size": "context_length",
        "np": "max_running", "parallel": "max_running",
        "ctk": "kv_dtype", "cache-type-k": "kv_dtype",
        "host": "host", "port": "port",
    },
    "trtllm": {
        "tp-size": "tp", "ep-size": "ep", "pp-size": "pp",
        "max-batch-size": "max_running", "max-seq-len": "context_length",
        "kv-cache-free-gpu-memory-fraction": "mem_fraction",
        "host": "host", "port": "port",
    },
}

# Effective-args names (sglang ServerArgs fields, vLLM arg names) -> table key.
EFFECTIVE = {
    "sglang": {
        "model_path": "model", "tp_size": "tp", "ep_size": "ep", "dp_size": "dp", "pp_size": "pp",
        "mem_fraction_static": "mem_fraction", "max_running_requests": "max_running",
        "context_length": "context_length", "quantization": "quantization",
        "kv_cache_dtype": "kv_dtype", "moe_runner_backend": "moe_backend",
        "moe_a2a_backend": "moe_backend", "attention_backend": "attention_backend",
        "host": "host", "port": "port",
    },
    "vllm": {
        "model": "model", "tensor_parallel_size": "tp", "data_parallel_size": "dp",
        "pipeline_parallel_size": "pp", "gpu_memory_utilization": "mem_fraction",
        "max_num_seqs": "max_running", "max_model_len": "context_length",
        "quantization": "quantization", "kv_cache_dtype": "kv_dtype",
        "all2all_backend": "moe_backend", "attention_backend": "attention_backend",
        "host": "host", "port": "port",
    },
}

INT_KEYS = {"tp", "ep", "dp", "pp", "max_running", "context_length", "port"}
FLOAT_KEYS = {"mem_fraction"}
# What each server does when a parallelism flag is absent.
DEFAULTS = {"tp": 1, "ep": 1, "dp": 1, "pp": 1}


@dataclass
class LaunchConfig:
    """One launch script, understood."""

    name: str
    server: str  # sglang | vllm | llama.cpp | trtllm | unknown
    argv: list[str]
    flags: dict[str, object]  # table key -> value (None when not known)
    sources: dict[str, str]  # table key -> "flag" | "default" | "env" | "implied"
    raw_flags: dict[str, object]  # every --flag as written (after variable expansion)
    comments: list[str]
    env: dict[str, str]
    warnings: list[str] = field(default_factory=list)
    unresolved: dict[str, list[str]] = field(default_factory=dict)  # table key -> variables not known

    def table(self) -> list[tuple[str, str, object]]:
        """(key, label, value) rows in display order."""
        return [(key, label, self.flags.get(key)) for key, label in FLAG_KEYS]

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "server": self.server, "argv": self.argv,
                "flags": {key: self.flags.get(key) for key in KEYS},
                "sources": dict(self.sources), "warnings": list(self.warnings),
                "unresolved": {key: list(names) for key, names in self.unresolved.items()}}


# A value that is there but can be no flag's (1e999, inf, NaN, a 5,000-digit number): shown as
# itself, never compared, never an exception (Python cannot even print such an integer).
UNREADABLE = "unreadable"
_WIDEST = 1 << 63  # no count, size or port is wider


def usable(value: object, depth: int = 0) -> bool:
    """Whether a value read from a script or a log can be held, shown and saved: no non-finite
    float and no integer too wide to print, however deep in a list or dict."""
    if isinstance(value, bool) or value is None or isinstance(value, str):
        return True
    if isinstance(value, int):
        return value.bit_length() <= 64
    if isinstance(value, float):
        return math.isfinite(value)
    if isinstance(value, (list, tuple, set, frozenset)) and depth < 100:
        return all(usable(v, depth + 1) for v in value)
    if isinstance(value, dict) and depth < 100:
        return all(usable(k, depth + 1) and usable(v, depth + 1) for k, v in value.items())
    return not isinstance(value, (list, tuple, set, frozenset, dict, complex))


def coerce(key: str, value: object) -> object:
    """A flag's value in the table's form: counts as integers, fractions as floats, other text as
    written; UNREADABLE for a number no flag can hold."""
    if value is None or isinstance(value, bool):
        return value
    if not usable(value):
        return UNREADABLE
    try:
        if key in INT_KEYS:
            number = float(value)  # type: ignore[arg-type]
            return int(number) if math.isfinite(number) and abs(number) < _WIDEST else UNREADABLE
        if key in FLOAT_KEYS:
            number = float(value)  # type: ignore[arg-type]
            return number if math.isfinite(number) else UNREADABLE
    except OverflowError:
        return UNREADABLE
    except (TypeError, ValueError):
        return value
    return value


def empty() -> dict[str, object]:
    return {key: None for key in KEYS}


def sglang_graphs(raw: dict[str, object]) -> tuple[object, str | None]:
    if raw.get("disable-cuda-graph") in (True, "True", "true"):
        return "off", "flag"
    if raw.get("cuda-graph-max-bs"):
        return f"max bs {raw['cuda-graph-max-bs']}", "flag"
    if raw.get("cuda-graph-bs"):
        return f"bs {raw['cuda-graph-bs']}", "flag"
    return None, None


@dataclass(frozen=True)
class Row:
    key: str
    label: str
    left: object
    right: object

    @property
    def differs(self) -> bool:
        return self.left != self.right


def diff(left: LaunchConfig | dict[str, Any], right: LaunchConfig | dict[str, Any]) -> list[Row]:
    """Every table row of two configs (flags dicts also accepted); .differs marks changes."""
    a = left.flags if isinstance(left, LaunchConfig) else left
    b = right.flags if isinstance(right, LaunchConfig) else right
    return [Row(key, label, a.get(key), b.get(key)) for key, label in FLAG_KEYS]


def changed(left: LaunchConfig | dict[str, Any], right: LaunchConfig | dict[str, Any]) -> list[Row]:
    return [row for row in diff(left, right) if row.differs]


@dataclass(frozen=True)
class Check:
    """One row of script vs. effective: mismatch only where both sides are known."""

    key: str
    label: str
    script: object
    effective: object
    unresolved: bool = False  # the script's value holds a variable that could not be known

    @property
    def mismatch(self) -> bool:
        if self.script is None or self.effective is None or self.unresolved:
            return False
        if UNREADABLE in (self.script, self.effective):
            return False  # as unknown as N/A
        return _same(self.key, self.script, self.effective) is False


def _same(key: str, a: object, b: object) -> bool:
    if key in FLOAT_KEYS:
        try:
            return abs(float(a) - float(b)) < 1e-6  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    return str(a).strip().lower() == str(b).strip().lower()


def compare(script: LaunchConfig, effective: dict[str, object]) -> list[Check]:
    unresolved = getattr(script, "unresolved", {}) or {}
    return [Check(key, label, script.flags.get(key), effective.get(key), key in unresolved)
            for key, label in FLAG_KEYS]


def show(value: object) -> str:
    """How a table value is printed: unknown is N/A, never 0."""
    if value is None:
        return UNKNOWN
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)
