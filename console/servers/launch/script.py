"""Launch scripts read as text, never run: what server command they start, with which flags.

Line continuations are joined, simple `VAR=value` / `export` / `$VAR` /
`${VAR:-default}` uses are resolved from what the script assigns and what is
known of the remote environment (its `$HOME`, read once over the host), and the
server command is found (sglang, vLLM, llama.cpp, TensorRT-LLM). A variable
that cannot be known is left as written (`$FOO`) and the flag is marked
unresolved: never expanded to empty, never guessed. A config whose name or
comments promise something its flags do not do ("ep8" in the name, expert
parallelism 1 in the flags) gets a warning.
"""
from __future__ import annotations

import re
import shlex
from collections import ChainMap
from pathlib import PurePath
from typing import Mapping, TypeVar

from .table import DEFAULTS, FLAG_KEYS, FLAGS, UNREADABLE, LaunchConfig, coerce, empty, sglang_graphs

_V = TypeVar("_V")


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


def _expand(text: str, env: Mapping[str, str]) -> str:
    """Known variables replaced; an unknown one stays as written (`$FOO`), to be marked unresolved."""
    def repl(match: re.Match[str]) -> str:
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


def _times(tp: object, dp: object) -> object:
    """tp × dp, the expert parallelism vLLM implies; a size still written as a variable stays
    written (`$TP`, `$TP*$DP`), and one no count can hold makes the product so too."""
    if isinstance(tp, int) and isinstance(dp, int):
        return tp * dp
    if UNREADABLE in (tp, dp):
        return UNREADABLE
    if dp == 1:
        return tp
    if tp == 1:
        return dp
    return f"{tp}*{dp}"


def _tilde(value: _V, home: str | None) -> _V | str:
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


def _normalise(server: str, raw: dict[str, object], positionals: list[str], env: dict[str, str]
               ) -> tuple[dict[str, object], dict[str, str]]:
    table, sources = empty(), {}
    mapping = FLAGS.get(server, {})
    for name, value in raw.items():
        key = mapping.get(name)
        if key and table[key] is None and value is not True:
            table[key] = coerce(key, value)
            sources[key] = "flag"
    if server in ("vllm", "trtllm") and table["model"] is None and positionals:
        table["model"], sources["model"] = positionals[0], "flag"
    if server == "sglang":
        if raw.get("enable-ep-moe") is True or raw.get("enable-deepep-moe") is True:
            if table["ep"] is None and table["tp"] is not None:
                table["ep"], sources["ep"] = table["tp"], "implied"
        if raw.get("enable-deepep-moe") is True and table["moe_backend"] is None:
            table["moe_backend"], sources["moe_backend"] = "deepep", "flag"
        table["cuda_graph"], source = sglang_graphs(raw)
        if source:
            sources["cuda_graph"] = source
    elif server == "vllm":
        if raw.get("enable-expert-parallel") is True and table["ep"] is None:
            table["ep"] = _times(table["tp"] or 1, table["dp"] or 1)
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
        for key, default in DEFAULTS.items():
            if table[key] is None:
                table[key], sources[key] = default, "default"
    return table, sources


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
