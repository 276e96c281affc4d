"""The campaign file: what to compare, how to sweep each, what to do when things go wrong.

    [sweep]                       # the bench settings every cell uses
    levels = [1, 4, 16]
    input_len = 128
    output_len = 64
    prompts_per_stream = 2        # or num_prompts = 32
    api = "completions"           # or "chat"
    model = "..."                 # default: what /v1/models lists first
    url = "http://127.0.0.1:8080" # default: the profile's [server] url, with the cell's --port
    slo = { ttft_ms = 500, tpot_ms = 50 }
    repeats = 3                   # each level measured this many times, in interleaved rounds

    [[config]]                    # launch configs by script name (as the Server tab lists them)
    name = "run_tp8"

    [[grid]]                      # one derived script per combination of flag values
    base = "run_tp8"
    flags = { "--cuda-graph-max-bs" = [16, 32, 64], "--max-running-requests" = [256, 512] }

    [policy]
    ready_timeout_s = 600
    on_crash = "continue"         # or "retry" (once)
    gpu_idle_timeout_s = 120      # wait for GPU memory to return to idle between cells
    gpu_idle_mib = 1024           # per GPU, what counts as idle
    stop_at_first_slo = false     # stop at the first config that meets every SLO
    min_effect = 2.0              # percent: a smaller difference never names a winner
    prune = false                 # stop repeating a config clearly behind the leader
"""
from __future__ import annotations

import itertools
import math
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any


class CampaignError(Exception):
    """A campaign file or command is wrong; one line naming the file and key."""


@dataclass
class SweepSpec:
    levels: list[int]
    input_len: int = 1024
    output_len: int = 256
    num_prompts: int | None = None
    prompts_per_stream: int | None = None
    api: str = "completions"
    model: str | None = None
    url: str | None = None
    slo: dict[str, float] = field(default_factory=dict)
    repeats: int = 3

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Policy:
    ready_timeout_s: float = 600.0
    on_crash: str = "continue"
    gpu_idle_timeout_s: float = 120.0
    gpu_idle_mib: float = 1024.0
    stop_at_first_slo: bool = False
    min_effect: float = 2.0
    prune: bool = False

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class GridSpec:
    base: str
    flags: dict[str, list[Any]]

    def combinations(self) -> list[dict[str, Any]]:
        names = list(self.flags)
        return [dict(zip(names, values)) for values in itertools.product(*(self.flags[n] for n in names))]


@dataclass
class CampaignSpec:
    sweep: SweepSpec
    configs: list[str]
    grids: list[GridSpec]
    policy: Policy
    source: str = "<campaign>"

    def to_json(self) -> dict:
        """The campaign file's own shape (what `from_dict` reads back), with None values left out."""
        sweep = {k: v for k, v in self.sweep.to_json().items() if v is not None}
        return {"sweep": sweep, "config": [{"name": n} for n in self.configs],
                "grid": [{"base": g.base, "flags": g.flags} for g in self.grids],
                "policy": self.policy.to_json()}


def _fail(where: str, key: str, expected: str, got: Any = None) -> None:
    tail = f", got {got!r}" if got is not None else ""
    raise CampaignError(f"{where}: key '{key}': expected {expected}{tail}")


def _positive(where: str, key: str, value: Any, integer: bool = True, allow_none: bool = True) -> Any:
    if value is None and allow_none:
        return None
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) or value <= 0:
        _fail(where, key, "a positive whole number" if integer else "a positive number", value)
    return value


def _min_effect(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        _fail(where, "policy.min_effect", "a percentage from 0 to 100", value)
    return float(value)


def _flag(where: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        _fail(where, key, "true or false", value)
    return value


def load(path: Path | str) -> CampaignSpec:
    where = str(path)
    try:
        raw = Path(path).read_bytes()
    except OSError as exc:
        raise CampaignError(f"{where}: cannot read: {exc.strerror or exc}") from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CampaignError(f"{where}: not valid TOML: {exc}") from None
    return from_dict(doc, where)


def from_dict(doc: dict, where: str = "<campaign>") -> CampaignSpec:
    for key in doc:
        if key not in ("sweep", "config", "grid", "policy"):
            _fail(where, key, "one of sweep, config, grid, policy", "unknown key")
    sweep_doc = doc.get("sweep")
    if not isinstance(sweep_doc, dict):
        _fail(where, "sweep", "a [sweep] table with at least `levels`")
    known = {"levels", "input_len", "output_len", "num_prompts", "prompts_per_stream", "api", "model", "url", "slo",
             "repeats"}
    for key in sweep_doc:
        if key not in known:
            _fail(where, f"sweep.{key}", "one of " + ", ".join(sorted(known)), "unknown key")
    levels = sweep_doc.get("levels")
    if not isinstance(levels, list) or not levels:
        _fail(where, "sweep.levels", "a list of concurrency levels, e.g. [1, 4, 16]", levels)
    for level in levels:
        _positive(where, "sweep.levels", level, allow_none=False)
    api = sweep_doc.get("api", "completions")
    if api not in ("completions", "chat"):
        _fail(where, "sweep.api", "'completions' or 'chat'", api)
    for key in ("model", "url"):
        if sweep_doc.get(key) is not None and not isinstance(sweep_doc[key], str):
            _fail(where, f"sweep.{key}", "a string", sweep_doc[key])
    url = sweep_doc.get("url")
    if url is not None and not url.startswith(("http://", "https://")):
        _fail(where, "sweep.url", "an http:// or https:// URL", url)
    slo = sweep_doc.get("slo", {})
    if not isinstance(slo, dict) or any(k not in ("ttft_ms", "tpot_ms", "e2el_ms") for k in slo):
        _fail(where, "sweep.slo", "a table of ttft_ms, tpot_ms, e2el_ms", slo)
    for key, value in slo.items():
        _positive(where, f"sweep.slo.{key}", value, integer=False, allow_none=False)
    sweep = SweepSpec(
        levels=[int(v) for v in levels],
        input_len=_positive(where, "sweep.input_len", sweep_doc.get("input_len", 1024), allow_none=False),
        output_len=_positive(where, "sweep.output_len", sweep_doc.get("output_len", 256), allow_none=False),
        num_prompts=_positive(where, "sweep.num_prompts", sweep_doc.get("num_prompts")),
        prompts_per_stream=_positive(where, "sweep.prompts_per_stream", sweep_doc.get("prompts_per_stream")),
        api=api, model=sweep_doc.get("model"), url=url, slo={k: float(v) for k, v in slo.items()},
        repeats=_positive(where, "sweep.repeats", sweep_doc.get("repeats", 3), allow_none=False))
    if sweep.repeats > 50:
        _fail(where, "sweep.repeats", "at most 50", sweep.repeats)

    configs = []
    for i, entry in enumerate(doc.get("config", []) if isinstance(doc.get("config", []), list) else [None]):
        if not isinstance(entry, dict) or not isinstance(entry.get("name"), str) or not entry["name"].strip():
            _fail(where, f"config[{i}].name", "a launch config name (its script name)", entry)
        configs.append(entry["name"].strip())
    grids = []
    for i, entry in enumerate(doc.get("grid", []) if isinstance(doc.get("grid", []), list) else [None]):
        if not isinstance(entry, dict) or not isinstance(entry.get("base"), str):
            _fail(where, f"grid[{i}].base", "the launch config the grid starts from", entry)
        flags = entry.get("flags")
        if not isinstance(flags, dict) or not flags:
            _fail(where, f"grid[{i}].flags", 'a table of flag = [values], e.g. { "--cuda-graph-max-bs" = [16, 32] }',
                  flags)
        for name, values in flags.items():
            if not name.startswith("-") or len(name.strip("-")) < 1 or any(c.isspace() for c in name):
                _fail(where, f"grid[{i}].flags", "flag names written as on the command line, e.g. "
                      "--max-running-requests or -c", name)
            if not isinstance(values, list) or not values or not all(
                    isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in values):
                _fail(where, f"grid[{i}].flags.{name}", "a non-empty list of numbers or strings", values)
            for v in values:
                if isinstance(v, str) and (not v or any(c in v for c in "\n\r\x00")):
                    _fail(where, f"grid[{i}].flags.{name}", "values without newlines", v)
        grids.append(GridSpec(base=entry["base"].strip(), flags={k: list(v) for k, v in flags.items()}))
    if not configs and not grids:
        _fail(where, "config", "at least one [[config]] or [[grid]]")

    policy_doc = doc.get("policy", {})
    if not isinstance(policy_doc, dict):
        _fail(where, "policy", "a [policy] table", policy_doc)
    pknown = {"ready_timeout_s", "on_crash", "gpu_idle_timeout_s", "gpu_idle_mib", "stop_at_first_slo",
              "min_effect", "prune"}
    for key in policy_doc:
        if key not in pknown:
            _fail(where, f"policy.{key}", "one of " + ", ".join(sorted(pknown)), "unknown key")
    on_crash = policy_doc.get("on_crash", "continue")
    if on_crash not in ("continue", "retry"):
        _fail(where, "policy.on_crash", "'continue' or 'retry'", on_crash)
    stop_first = policy_doc.get("stop_at_first_slo", False)
    if not isinstance(stop_first, bool):
        _fail(where, "policy.stop_at_first_slo", "true or false", stop_first)
    policy = Policy(
        ready_timeout_s=float(_positive(where, "policy.ready_timeout_s", policy_doc.get("ready_timeout_s", 600.0),
                                        integer=False, allow_none=False)),
        on_crash=on_crash,
        gpu_idle_timeout_s=float(_positive(where, "policy.gpu_idle_timeout_s",
                                           policy_doc.get("gpu_idle_timeout_s", 120.0), integer=False, allow_none=False)),
        gpu_idle_mib=float(_positive(where, "policy.gpu_idle_mib", policy_doc.get("gpu_idle_mib", 1024.0),
                                     integer=False, allow_none=False)),
        stop_at_first_slo=stop_first, min_effect=_min_effect(where, policy_doc.get("min_effect", 2.0)),
        prune=_flag(where, "policy.prune", policy_doc.get("prune", False)))
    return CampaignSpec(sweep=sweep, configs=configs, grids=grids, policy=policy, source=where)
