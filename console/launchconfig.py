"""Launch configs: what a launch script really asks the server to do.

A launch script is read as text (never run): line continuations are
joined, simple `VAR=value` / `export` / `$VAR` / `${VAR:-default}` uses are
resolved from what the script assigns and what is known of the remote
environment (its `$HOME`, read once over the host), and the server command is
found (sglang, vLLM, llama.cpp, TensorRT-LLM). A variable that cannot be
known is left as written (`$FOO`) and the flag is marked unresolved: never
expanded to empty, never guessed. Its flags are normalised into one table (`FLAG_KEYS`) so
that configs of different servers can be shown and diffed side by side.

The same table is built from what a running server says it uses (sglang's
`server_args=ServerArgs(...)`, vLLM's `non-default args: {...}`, the model,
slots, context, KV type and address llama.cpp's server prints as it starts), so the
script can be checked against the effective values. And a config whose
name or comments promise something its flags do not do ("ep8" in the name,
expert parallelism 1 in the flags) gets a warning.
"""
from __future__ import annotations

import ast
import re
import shlex
from collections import ChainMap
from dataclasses import dataclass, field
from pathlib import PurePath

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
_FLAGS = {
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
_EFFECTIVE = {
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

_INT_KEYS = {"tp", "ep", "dp", "pp", "max_running", "context_length", "port"}
_FLOAT_KEYS = {"mem_fraction"}
# What each server does when a parallelism flag is absent.
_DEFAULTS = {"tp": 1, "ep": 1, "dp": 1, "pp": 1}


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

    def to_json(self) -> dict:
        return {"name": self.name, "server": self.server, "argv": self.argv,
                "flags": {key: self.flags.get(key) for key in KEYS},
                "sources": dict(self.sources), "warnings": list(self.warnings),
                "unresolved": {key: list(names) for key, names in self.unresolved.items()}}


class LaunchConfigError(ValueError):
    """The script has no server command that we know."""


# ------------------------------------------------------------------ shell text
_VAR = re.compile(r"\$(?:\{(\w+)(?::?-([^}]*))?\}|(\w+))")
_DECLARE = {"export", "declare", "local", "readonly", "-x"}


def _is_assignment(command: str) -> bool:
    """A line that only sets variables (VAR=value, export VAR=value)."""
    words = _split(command)
    body = [w for w in words if w not in _DECLARE]
    return bool(body) and all(re.match(r"^[A-Za-z_]\w*=", w) for w in body)


def _expand(text: str, env) -> str:
    """Known variables replaced; an unknown one stays as written (`$FOO`), to be marked unresolved."""
    def repl(match: re.Match) -> str:
        name = match.group(1) or match.group(3)
        if name in env:
            return env[name]
        if match.group(2) is not None:
            return _expand(match.group(2), env)
        return match.group(0)
    return _VAR.sub(repl, text)


def unresolved_names(value: object) -> list[str]:
    """The variables still written in a value after expansion (script arguments `$1` aside)."""
    if not isinstance(value, str):
        return []
    names = [m.group(1) or m.group(3) for m in _VAR.finditer(value)]
    return [n for n in dict.fromkeys(names) if not n.isdigit()]


def _tilde(value: object, home: str | None) -> object:
    if home and isinstance(value, str) and (value == "~" or value.startswith("~/")):
        return home + value[1:]
    return value


def logical_lines(text: str) -> tuple[list[str], list[str]]:
    """Commands (continuations joined) and the comment texts of a script."""
    commands, comments, current = [], [], ""
    for raw in text.splitlines():
        stripped = raw.strip()
        if not current and stripped.startswith("#"):
            if not stripped.startswith("#!"):
                comments.append(stripped.lstrip("#").strip())
            continue
        if stripped.startswith("#"):  # a comment inside a continued command
            comments.append(stripped.lstrip("#").strip())
            continue
        if raw.rstrip().endswith("\\"):
            current += raw.rstrip()[:-1] + " "
            continue
        current += raw
        if current.strip():
            commands.append(current.strip())
        current = ""
    if current.strip():
        commands.append(current.strip())
    return commands, comments


def _split(command: str) -> list[str]:
    lexer = shlex.shlex(command, posix=True, punctuation_chars=";&|<>")
    lexer.whitespace_split = True
    lexer.commenters = "#"
    try:
        return list(lexer)
    except ValueError:  # unbalanced quotes: fall back to plain words
        return command.split()


_WRAPPERS = {"nohup", "exec", "env", "setsid", "time", "sudo", "stdbuf", "taskset", "numactl", "uv", "run"}
_STOP = {";", "&", "&&", "|", "||", ">", ">>", "<", "2>", "2>&1", "&>"}


def _command_words(words: list[str]) -> tuple[list[str], dict[str, str]]:
    """The command of one pipeline stage, without leading VAR=value and wrappers."""
    inline_env: dict[str, str] = {}
    out: list[str] = []
    for word in words:
        if word in _STOP or word.startswith((">", "2>", "1>")):
            break
        if not out:
            assign = re.match(r"^([A-Za-z_]\w*)=(.*)$", word)
            if assign:
                inline_env[assign.group(1)] = assign.group(2)
                continue
            if word in _WRAPPERS or word.startswith("-"):
                continue
        out.append(word)
    return out, inline_env


def _server_of(argv: list[str]) -> tuple[str, int] | None:
    """(server, index of the first argument after the server command)."""
    for i, word in enumerate(argv):
        base = PurePath(word).name
        nxt = argv[i + 1] if i + 1 < len(argv) else ""
        if word == "-m" and nxt in ("sglang.launch_server", "sglang_router.launch_server"):
            return "sglang", i + 2
        if word == "-m" and nxt == "vllm.entrypoints.openai.api_server":
            return "vllm", i + 2
        if base == "sglang" and nxt == "serve":
            return "sglang", i + 2
        if base == "vllm" and nxt == "serve":
            return "vllm", i + 2
        if base in ("llama-server", "llama-server.exe", "server") and (base != "server" or "llama" in word):
            return "llama.cpp", i + 1
        if base == "trtllm-serve":
            return "trtllm", i + 2 if nxt == "serve" else i + 1
    return None


def _parse_args(args: list[str]) -> tuple[dict[str, object], list[str]]:
    """--flag value / --flag=value / --switch (True); positionals kept apart."""
    flags: dict[str, object] = {}
    positionals: list[str] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word.startswith("-") and len(word) > 1 and not _is_number(word):
            name, eq, value = word.lstrip("-").partition("=")
            name = name.replace("_", "-")
            if eq:
                flags[name] = value
            elif i + 1 < len(args) and (not args[i + 1].startswith("-") or _is_number(args[i + 1])):
                values = []
                while i + 1 < len(args) and (not args[i + 1].startswith("-") or _is_number(args[i + 1])):
                    values.append(args[i + 1])
                    i += 1
                flags[name] = values[0] if len(values) == 1 else " ".join(values)
            else:
                flags[name] = True
        else:
            positionals.append(word)
        i += 1
    return flags, positionals


def _is_number(word: str) -> bool:
    try:
        float(word)
        return True
    except ValueError:
        return False


def _coerce(key: str, value: object) -> object:
    if value is None or isinstance(value, bool):
        return value
    try:
        if key in _INT_KEYS:
            return int(float(value))  # type: ignore[arg-type]
        if key in _FLOAT_KEYS:
            return float(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return value
    return value


# ------------------------------------------------------------------ the table
def _empty() -> dict[str, object]:
    return {key: None for key in KEYS}


def _normalise(server: str, raw: dict[str, object], positionals: list[str], env: dict[str, str]
               ) -> tuple[dict[str, object], dict[str, str]]:
    table, sources = _empty(), {}
    mapping = _FLAGS.get(server, {})
    for name, value in raw.items():
        key = mapping.get(name)
        if key and table[key] is None and value is not True:
            table[key] = _coerce(key, value)
            sources[key] = "flag"
    if server in ("vllm", "trtllm") and table["model"] is None and positionals:
        table["model"], sources["model"] = positionals[0], "flag"
    if server == "sglang":
        if raw.get("enable-ep-moe") is True or raw.get("enable-deepep-moe") is True:
            if table["ep"] is None and table["tp"] is not None:
                table["ep"], sources["ep"] = table["tp"], "implied"
        if raw.get("enable-deepep-moe") is True and table["moe_backend"] is None:
            table["moe_backend"], sources["moe_backend"] = "deepep", "flag"
        table["cuda_graph"], source = _sglang_graphs(raw)
        if source:
            sources["cuda_graph"] = source
    elif server == "vllm":
        if raw.get("enable-expert-parallel") is True and table["ep"] is None:
            table["ep"] = (table["tp"] or 1) * (table["dp"] or 1)
            sources["ep"] = "implied"
        if table["attention_backend"] is None and env.get("VLLM_ATTENTION_BACKEND"):
            table["attention_backend"], sources["attention_backend"] = env["VLLM_ATTENTION_BACKEND"], "env"
        if raw.get("enforce-eager") is True:
            table["cuda_graph"], sources["cuda_graph"] = "off", "flag"
        elif raw.get("cuda-graph-sizes"):
            table["cuda_graph"], sources["cuda_graph"] = f"sizes {raw['cuda-graph-sizes']}", "flag"
    elif server == "llama.cpp":
        if raw.get("flash-attn") in (True, "on") or raw.get("fa") in (True, "on"):
            table["attention_backend"], sources["attention_backend"] = "flash-attn", "flag"
        if table["model"] is None and raw.get("hf-repo"):
            table["model"], sources["model"] = raw["hf-repo"], "flag"
    if server in ("sglang", "vllm", "trtllm"):
        for key, default in _DEFAULTS.items():
            if table[key] is None:
                table[key], sources[key] = default, "default"
    return table, sources


def _sglang_graphs(raw: dict[str, object]) -> tuple[object, str | None]:
    if raw.get("disable-cuda-graph") in (True, "True", "true"):
        return "off", "flag"
    if raw.get("cuda-graph-max-bs"):
        return f"max bs {raw['cuda-graph-max-bs']}", "flag"
    if raw.get("cuda-graph-bs"):
        return f"bs {raw['cuda-graph-bs']}", "flag"
    return None, None


def parse_script(text: str, name: str = "", environ: dict[str, str] | None = None) -> LaunchConfig:
    """Understand a launch script's text; LaunchConfigError if no server command.

    `environ` is what is known of the environment the script runs in on its
    host (`remote_env.remote_environ`: HOME, USER); what the script assigns
    comes first. Anything else stays `$NAME` and is listed in `unresolved`.
    """
    commands, comments = logical_lines(text)
    env: dict[str, str] = {}
    known = ChainMap(env, dict(environ or {}))
    for command in commands:
        if _is_assignment(command):
            for word in _split(command):
                match = re.match(r"^([A-Za-z_]\w*)=(.*)$", word, re.S)
                if match:
                    env[match.group(1)] = _expand(match.group(2), known)
            continue
        words = _split(_expand(command, known))
        argv, inline_env = _command_words(words)
        found = _server_of(argv)
        if not found:
            continue
        server, first_arg = found
        full_env = {**env, **inline_env}
        raw, positionals = _parse_args(argv[first_arg:])
        home = known.get("HOME")
        raw = {flag: _tilde(value, home) for flag, value in raw.items()}
        positionals = [_tilde(p, home) for p in positionals]
        flags, sources = _normalise(server, raw, positionals, full_env)
        unresolved = {key: names for key, value in flags.items() if (names := unresolved_names(value))}
        config = LaunchConfig(name=name, server=server, argv=argv, flags=flags, sources=sources,
                              raw_flags=raw, comments=comments, env=full_env, unresolved=unresolved)
        config.warnings = promise_warnings(config) + unresolved_warnings(config)
        return config
    raise LaunchConfigError(f"{name or 'script'}: no sglang, vLLM, llama.cpp or TensorRT-LLM command found")


def unresolved_warnings(config: LaunchConfig) -> list[str]:
    """One line per flag whose value still holds a variable nobody could know."""
    labels = dict(FLAG_KEYS)
    return [f"{labels.get(key, key)}: {' '.join('$' + n for n in names)} unresolved "
            f"(not set by the script, not known on the host); shown as written"
            for key, names in config.unresolved.items()]


# ------------------------------------------------------------------ promises
_PROMISE = re.compile(r"(?<![A-Za-z])(tp|ep|dp|pp)[ _\-=]?(\d+)(?!\d)", re.I)


def promise_warnings(config: LaunchConfig) -> list[str]:
    """Where the name or comments say tp/ep/dp/pp N and the flags say otherwise."""
    warnings: list[str] = []
    for where, text in [("the name", config.name)] + [("a comment", c) for c in config.comments]:
        for match in _PROMISE.finditer(text):
            key, promised = match.group(1).lower(), int(match.group(2))
            actual = config.flags.get(key)
            if actual is None or actual == promised:
                continue
            message = f"{where} says {key}{promised}; the flags say {key} {actual}"
            if key == "ep" and actual == 1 and config.flags.get("tp"):
                message += f": this is TP{config.flags['tp']}"
            if message not in warnings:
                warnings.append(message)
    return warnings


# ------------------------------------------------------------------ diff / compare
@dataclass(frozen=True)
class Row:
    key: str
    label: str
    left: object
    right: object

    @property
    def differs(self) -> bool:
        return self.left != self.right


def diff(left: LaunchConfig | dict, right: LaunchConfig | dict) -> list[Row]:
    """Every table row of two configs (flags dicts also accepted); .differs marks changes."""
    a = left.flags if isinstance(left, LaunchConfig) else left
    b = right.flags if isinstance(right, LaunchConfig) else right
    return [Row(key, label, a.get(key), b.get(key)) for key, label in FLAG_KEYS]


def changed(left: LaunchConfig | dict, right: LaunchConfig | dict) -> list[Row]:
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
        return _same(self.key, self.script, self.effective) is False


def _same(key: str, a: object, b: object) -> bool:
    if key in _FLOAT_KEYS:
        try:
            return abs(float(a) - float(b)) < 1e-6  # type: ignore[arg-type]
        except (TypeError, ValueError):
            pass
    return str(a).strip().lower() == str(b).strip().lower()


def compare(script: LaunchConfig, effective: dict[str, object]) -> list[Check]:
    unresolved = getattr(script, "unresolved", {}) or {}
    return [Check(key, label, script.flags.get(key), effective.get(key), key in unresolved)
            for key, label in FLAG_KEYS]


# ------------------------------------------------------------------ effective args from logs
_SGLANG_ARGS = re.compile(r"server_args=ServerArgs\((.*)")
_VLLM_ARGS = re.compile(r"non-default args: (\{.*)")


@dataclass
class EffectiveArgs:
    server: str
    line: int
    raw: dict[str, object]
    flags: dict[str, object]


def effective_from_log(lines) -> EffectiveArgs | None:
    """The effective args a server log states, normalised into the table.

    sglang and vLLM state them on one line; llama.cpp's server over several
    lines as it starts, complete when it says where it listens (a log that
    ends before that gives what it had said so far).
    """
    reader = EffectiveReader()
    for line in lines:
        found = reader.feed(line)
        if found is not None:
            return found
    return reader.partial()


class EffectiveReader:
    """Fed a server log line by line (as a monitor follows it); `feed` returns the args once known."""

    def __init__(self) -> None:
        self.number = 0
        self._llama: dict[str, object] = {}
        self._llama_line: int | None = None

    def feed(self, line: str) -> EffectiveArgs | None:
        self.number += 1
        if "ServerArgs(" in line:
            match = _SGLANG_ARGS.search(line)
            if match:
                raw = _call_kwargs(match.group(1))
                if raw:
                    return EffectiveArgs("sglang", self.number, raw, _effective_table("sglang", raw))
        if "non-default args" in line:
            match = _VLLM_ARGS.search(line)
            if match:
                raw = _dict_literal(match.group(1))
                if raw:
                    return EffectiveArgs("vllm", self.number, raw, _effective_table("vllm", raw))
        if _LLAMA_HINT.search(line):
            return self._feed_llama(line)
        return None

    def _feed_llama(self, line: str) -> EffectiveArgs | None:
        raw = self._llama
        for name, pattern in _LLAMA_FACTS:
            match = pattern.search(line)
            if match:
                if self._llama_line is None:
                    self._llama_line = self.number
                groups = [g for g in match.groups() if g is not None]
                if name == "listen":
                    raw["host"], raw["port"] = groups[0].strip("[]"), int(groups[1])
                else:
                    raw.setdefault(name, groups[0])
        if raw.get("model") is not None or raw.get("n_slots") is not None:
            if _LLAMA_LISTENING.search(line):
                return self.partial()
        return None

    def partial(self) -> EffectiveArgs | None:
        """What a llama.cpp log has said so far, or None when it said nothing."""
        if not self._llama or self._llama_line is None:
            return None
        raw = dict(self._llama)
        return EffectiveArgs("llama.cpp", self._llama_line, raw, _llama_table(raw))


# What llama.cpp's server prints while it starts: the terse default of recent
# builds ("load_model: initializing, n_slots = 4, n_ctx_slot = 1024, kv_unified
# = 'false'", "listening on http://127.0.0.1:8080") and the fuller lines of
# older builds or -v ("llama_context: n_ctx = 4096", "flash_attn = enabled",
# "K (q8_0)", "HTTP server is listening, hostname: H, port: P"; before the
# context code was renamed, "llama_new_context_with_model: n_ctx = 4096").
_LLAMA_HINT = re.compile(r"load_model|llama_context|llama_new_context|llama_kv_cache|listening|n_slots|main:")
_LLAMA_CTX = r"(?:llama_context|llama_new_context_with_model):\s+"  # the newer and the older name
_LLAMA_FACTS: tuple[tuple[str, re.Pattern], ...] = (
    ("model", re.compile(r"load_model: loading model '(.+)'")),
    ("n_slots", re.compile(r"\bn_slots\s*=\s*(\d+)")),
    ("n_ctx_slot", re.compile(r"\bn_ctx_slot\s*=\s*(\d+)")),
    ("kv_unified", re.compile(r"\bkv_unified\s*=\s*'?(\w+)'?")),
    ("n_seq_max", re.compile(_LLAMA_CTX + r"n_seq_max\s*=\s*(\d+)")),
    ("n_ctx", re.compile(_LLAMA_CTX + r"n_ctx\s*=\s*(\d+)")),
    ("flash_attn", re.compile(_LLAMA_CTX + r"flash_attn\s*=\s*(\w+)")),
    ("type_k", re.compile(r"(?:llama_kv_cache\w*|llama_new_context_with_model):.*?"
                          r"(?:\bK \((\w+)\)|type_k = '(\w+)')")),
    ("listen", re.compile(r"listening on https?://(\[[^\]]+\]|[^\s:/]+):(\d+)"
                          r"|listening, hostname: (\S+), port: (\d+)")),
)
_LLAMA_LISTENING = re.compile(r"listening on https?://")


def _llama_table(raw: dict[str, object]) -> dict[str, object]:
    table = _empty()
    table["model"] = raw.get("model")
    slots = _int_or_none(raw.get("n_seq_max")) or _int_or_none(raw.get("n_slots"))
    table["max_running"] = slots
    ctx = _int_or_none(raw.get("n_ctx"))
    per_slot = _int_or_none(raw.get("n_ctx_slot"))
    if ctx is None and per_slot is not None:
        unified = str(raw.get("kv_unified", "")).lower() in ("true", "1")
        ctx = per_slot if unified or not slots else per_slot * slots
    table["context_length"] = ctx
    flash = str(raw.get("flash_attn") or "").lower()
    if flash:
        table["attention_backend"] = "flash-attn" if flash in ("enabled", "1", "true", "on") else "off"
    table["kv_dtype"] = raw.get("type_k")
    table["host"] = raw.get("host")
    table["port"] = raw.get("port")
    return table


def _int_or_none(value: object) -> int | None:
    try:
        return int(value)  # type: ignore[arg-type]
    except (TypeError, ValueError):
        return None


_MAX_NESTING = 60   # deeper brackets than any real server prints: never handed to the parser


def _too_deep(text: str) -> bool:
    """Log text is hostile: deep nesting would make Python's parser recurse until it fails,
    and on 3.11 such a failure can leave later ast.parse calls broken for the whole process."""
    depth = 0
    for ch in text:
        if ch in "([{":
            depth += 1
            if depth > _MAX_NESTING:
                return True
        elif ch in ")]}":
            depth = max(0, depth - 1)
    return False


def _call_kwargs(body: str) -> dict[str, object]:
    """key=value pairs of a logged dataclass repr; unparseable values are skipped."""
    body = body.rstrip()
    end = body.rfind(")")
    text = f"f({body[:end + 1]}" if end >= 0 else f"f({body})"
    if _too_deep(text):
        return _pairs(body, r"(\w+)=('(?:[^'\\]|\\.)*'|[^,()]+)")
    try:
        call = ast.parse(text, mode="eval").body
        out = {}
        for keyword in call.keywords:  # type: ignore[attr-defined]
            try:
                out[keyword.arg] = ast.literal_eval(keyword.value)
            except ValueError:
                out[keyword.arg] = ast.unparse(keyword.value)
        return out
    except (SyntaxError, ValueError, RecursionError, MemoryError, SystemError):
        return _pairs(body, r"(\w+)=('(?:[^'\\]|\\.)*'|[^,()]+)")


def _dict_literal(body: str) -> dict[str, object]:
    end = body.rfind("}")
    if _too_deep(body[:end + 1]):
        return _pairs(body, r"'(\w+)': ('(?:[^'\\]|\\.)*'|[^,{}]+)")
    try:
        value = ast.literal_eval(body[:end + 1])
        return value if isinstance(value, dict) else {}
    except (ValueError, SyntaxError, RecursionError, MemoryError, SystemError):
        return _pairs(body, r"'(\w+)': ('(?:[^'\\]|\\.)*'|[^,{}]+)")


def _pairs(body: str, pattern: str) -> dict[str, object]:
    out = {}
    for key, value in re.findall(pattern, body):
        try:
            out[key] = ast.literal_eval(value.strip()) if not _too_deep(value) else value.strip()
        except (ValueError, SyntaxError, RecursionError, MemoryError, SystemError):
            out[key] = value.strip()
    return out


def _effective_table(server: str, raw: dict[str, object]) -> dict[str, object]:
    table = _empty()
    for name, key in _EFFECTIVE[server].items():
        if name in raw and raw[name] is not None and table[key] is None:
            table[key] = _coerce(key, raw[name])
    if server == "sglang":
        if raw.get("enable_ep_moe") and raw.get("ep_size") in (None, 1):
            table["ep"] = table["tp"]
        if raw.get("enable_deepep_moe") and table["moe_backend"] is None:
            table["moe_backend"] = "deepep"
        graphs, _ = _sglang_graphs({k.replace("_", "-"): v for k, v in raw.items()
                                    if k in ("disable_cuda_graph", "cuda_graph_max_bs", "cuda_graph_bs")})
        table["cuda_graph"] = graphs if graphs is not None else (
            "on" if raw.get("disable_cuda_graph") is False else None)
    else:  # vLLM logs only what differs from its defaults
        for key, default in _DEFAULTS.items():
            if table[key] is None:
                table[key] = default
        if raw.get("enable_expert_parallel"):
            table["ep"] = (table["tp"] or 1) * (table["dp"] or 1)
        if raw.get("enforce_eager"):
            table["cuda_graph"] = "off"
    return table


def show(value: object) -> str:
    """How a table value is printed: unknown is N/A, never 0."""
    if value is None:
        return "N/A"
    if value is True:
        return "on"
    if value is False:
        return "off"
    return str(value)
