"""What a running server says it really uses, read from its startup log.

sglang prints `server_args=ServerArgs(...)`, vLLM `non-default args: {...}`, and
llama.cpp's server the model, slots, context, KV type and address as it starts.
Each becomes the same table a launch script gives, so the script can be checked
against the effective values. A log is anyone's text: a value no flag can hold
(`tensor_parallel_size: 1e999`, `inf`, 5,000 digits) reads `unreadable` and is
named in `EffectiveArgs.unreadable`; reading goes on.
"""
from __future__ import annotations

import ast
import re
from dataclasses import dataclass, field
from typing import Iterable

from ...gc_pause import collector_paused
from .table import DEFAULTS, EFFECTIVE, UNREADABLE, coerce, empty, sglang_graphs, usable

_SGLANG_ARGS = re.compile(r"server_args=ServerArgs\((.*)")
# sglang 0.5.2x logs the resolved args as a dict instead: `server_args={'model_path': ...}`.
_SGLANG_DICT = re.compile(r"server_args=(\{.*)")
_VLLM_ARGS = re.compile(r"non-default args: (\{.*)")


@dataclass
class EffectiveArgs:
    server: str
    line: int
    raw: dict[str, object]
    flags: dict[str, object]
    unreadable: list[str] = field(default_factory=list)  # the log's names whose values no flag can hold


def _found(server: str, line: int, raw: dict[str, object]) -> EffectiveArgs:
    """The args of one log, with every value no flag can hold made UNREADABLE and named."""
    bad = [str(k) for k, v in raw.items() if not usable(v)]
    raw = {str(k): v if usable(v) else UNREADABLE for k, v in raw.items()}
    table = _llama_table(raw) if server == "llama.cpp" else _effective_table(server, raw)
    names = EFFECTIVE.get(server, {})
    bad += [name for name, key in names.items() if table.get(key) == UNREADABLE and name in raw and name not in bad]
    if server == "llama.cpp":
        bad += [key for key, value in table.items() if value == UNREADABLE and key not in bad]
    return EffectiveArgs(server, line, raw, table, bad)


def effective_from_log(lines: Iterable[str]) -> EffectiveArgs | None:
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
                    return _found("sglang", self.number, raw)
        if "server_args={" in line:
            match = _SGLANG_DICT.search(line)
            if match:
                raw = _dict_literal(match.group(1))
                if raw:
                    return _found("sglang", self.number, raw)
        if "non-default args" in line:
            match = _VLLM_ARGS.search(line)
            if match:
                raw = _dict_literal(match.group(1))
                if raw:
                    return _found("vllm", self.number, raw)
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
                    raw["host"], raw["port"] = groups[0].strip("[]"), coerce("port", groups[1])
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
        return _found("llama.cpp", self._llama_line, dict(self._llama))


# What llama.cpp's server prints while it starts: the terse default of recent
# builds ("load_model: initializing, n_slots = 4, n_ctx_slot = 1024, kv_unified
# = 'false'", "listening on http://127.0.0.1:8080") and the fuller lines of
# older builds or -v ("llama_context: n_ctx = 4096", "flash_attn = enabled",
# "K (q8_0)", "HTTP server is listening, hostname: H, port: P"; before the
# context code was renamed, "llama_new_context_with_model: n_ctx = 4096").
_LLAMA_HINT = re.compile(r"load_model|llama_context|llama_new_context|llama_kv_cache|listening|n_slots|main:")
_LLAMA_CTX = r"(?:llama_context|llama_new_context_with_model):\s+"  # the newer and the older name
_LLAMA_FACTS: tuple[tuple[str, re.Pattern[str]], ...] = (
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
    table = empty()
    table["model"] = raw.get("model")
    slots = _int_or_none(raw.get("n_seq_max")) or _int_or_none(raw.get("n_slots"))
    table["max_running"] = slots
    ctx: object = _int_or_none(raw.get("n_ctx"))
    per_slot = _int_or_none(raw.get("n_ctx_slot"))
    if ctx is None and per_slot is not None:
        unified = str(raw.get("kv_unified", "")).lower() in ("true", "1")
        ctx = per_slot if unified or not slots else (
            coerce("context_length", per_slot * slots) if isinstance(per_slot, int) and isinstance(slots, int)
            else UNREADABLE)
    table["context_length"] = ctx
    flash = str(raw.get("flash_attn") or "").lower()
    if flash:
        table["attention_backend"] = "flash-attn" if flash in ("enabled", "1", "true", "on") else "off"
    table["kv_dtype"] = raw.get("type_k")
    table["host"] = raw.get("host")
    table["port"] = raw.get("port")
    return table


def _int_or_none(value: object) -> int | str | None:
    """A count the log states, or None; UNREADABLE stays so (a number too wide for any count)."""
    found = coerce("max_running", value)
    return found if isinstance(found, int) or found == UNREADABLE else None


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
        with collector_paused():  # 3.11: a finaliser mid-parse fails the AST build
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
        with collector_paused():  # 3.11: a finaliser mid-parse fails the AST build
            value = ast.literal_eval(body[:end + 1])
        return value if isinstance(value, dict) else {}
    except (ValueError, SyntaxError, RecursionError, MemoryError, SystemError):
        return _pairs(body, r"'(\w+)': ('(?:[^'\\]|\\.)*'|[^,{}]+)")


def _pairs(body: str, pattern: str) -> dict[str, object]:
    out = {}
    for key, value in re.findall(pattern, body):
        try:
            with collector_paused():  # 3.11: a finaliser mid-parse fails the AST build
                out[key] = ast.literal_eval(value.strip()) if not _too_deep(value) else value.strip()
        except (ValueError, SyntaxError, RecursionError, MemoryError, SystemError):
            out[key] = value.strip()
    return out


def _effective_table(server: str, raw: dict[str, object]) -> dict[str, object]:
    table = empty()
    for name, key in EFFECTIVE[server].items():
        if name in raw and raw[name] is not None and table[key] is None:
            table[key] = coerce(key, raw[name])
    if server == "sglang":
        if raw.get("enable_ep_moe") and raw.get("ep_size") in (None, 1):
            table["ep"] = table["tp"]
        if raw.get("enable_deepep_moe") and table["moe_backend"] is None:
            table["moe_backend"] = "deepep"
        graphs, _ = sglang_graphs({k.replace("_", "-"): v for k, v in raw.items()
                                    if k in ("disable_cuda_graph", "cuda_graph_max_bs", "cuda_graph_bs")})
        decode = raw.get("cuda_graph_config")
        decode = decode.get("decode") if isinstance(decode, dict) else None
        if isinstance(decode, dict) and decode.get("backend") == "disabled":
            graphs = "off"  # 0.5.2x: the resolved config, after CPU or attention rules turned graphs off
        table["cuda_graph"] = graphs if graphs is not None else (
            "on" if raw.get("disable_cuda_graph") is False else None)
    else:  # vLLM logs only what differs from its defaults
        for key, default in DEFAULTS.items():
            if table[key] is None:
                table[key] = default
        if raw.get("enable_expert_parallel"):
            tp, dp = table["tp"] or 1, table["dp"] or 1
            table["ep"] = coerce("ep", tp * dp) if isinstance(tp, int) and isinstance(dp, int) else UNREADABLE
        if raw.get("enforce_eager"):
            table["cuda_graph"] = "off"
    return table
