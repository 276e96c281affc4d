"""The campaign file: what to compare, how to sweep each, what to do when things go wrong.

    [sweep]                       # the bench settings every cell uses
    levels = [1, 4, 16]
    input_len = 128
    output_len = 64
    prompts_per_stream = 2        # or num_prompts = 32
    dataset = "prompts.jsonl"     # fixed prompts instead of input_len (beside this file, or a full path;
                                  # .jsonl: one {"prompt": ..., "output_len": ...} a line, else ShareGPT;
                                  # read whole when the campaign is made, resumed and driven, before any launch)
    api = "completions"           # or "chat"
    model = "..."                 # default: what /v1/models lists first
    url = "http://127.0.0.1:8080" # default: the profile's [server] url, with the cell's --port
    slo = { ttft_ms = 500, tpot_ms = 50 }
    repeats = 3                   # each level measured this many times, in interleaved rounds
                                  # (the least, with [policy] precision)

    [[config]]                    # launch configs by script name (as the Server tab lists them)
    name = "run_tp8"

    [[grid]]                      # one derived script per combination of flag values
    base = "run_tp8"
    flags = { "--cuda-graph-max-bs" = [16, 32, 64], "--max-running-requests" = [256, 512] }

    [slo]                         # search each config's highest load under this SLO (console.campaign.slo_search)
    ttft_p99_ms = 2000
    tpot_p99_ms = 50

    [policy]
    ready_timeout_s = 600
    on_crash = "continue"         # or "retry" (once)
    gpu_idle_timeout_s = 120      # wait for GPU memory to return to idle between cells
    gpu_idle_mib = 1024           # per GPU, what counts as idle
    stop_at_first_slo = false     # stop at the first config that meets every SLO
    max_cells = 1000              # refuse a bigger campaign unless raised here (or by --max-cells)
    min_effect = 2.0              # percent: a smaller difference never names a winner
    prune = false                 # stop repeating a config clearly behind the leader
    precision = 0.05              # repeat a cell until its deciding level's 95% CI is within ±5% of its mean
    max_repeats = 10              # ... or until this many repeats (with precision, `repeats` is the least)
    try_infeasible = false        # launch a config whose weights + KV cache cannot fit its GPUs' memory

Everything in the file is checked before anything runs: flag names follow the
servers' own grammar (a name becomes part of a shell script), config names are
names, never paths, and every size has a cap (`console.limits`).
"""
from __future__ import annotations

import itertools
import math
import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NoReturn

from .. import limits
from ..bench import limits as load_limits
from ..store.files import FileRefused, read_capped

# What a server flag looks like: `--max-running-requests`, `--speculative-config.num-steps`.
FLAG_NAME = re.compile(r"--[a-z0-9][a-z0-9-]*(?:\.[a-z0-9-]+)*")
# A launch config's name as the Server tab lists it: never a path.
_BAD_NAME = re.compile(r"[/\x00-\x1f\x7f]")

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
    dataset: str | None = None

    def to_json(self) -> dict:
        return dict(self.__dict__)


@dataclass
class Policy:
    ready_timeout_s: float = 600.0
    on_crash: str = "continue"
    gpu_idle_timeout_s: float = 120.0
    gpu_idle_mib: float = 1024.0
    stop_at_first_slo: bool = False
    max_cells: int = limits.MAX_CELLS
    parallel: int = 1  # cells at once, each its own job (a Slurm profile; console.campaign.parallel)
    hosts: list[str] = field(default_factory=list)  # profiles that each run one cell at a time (--hosts)
    min_effect: float = 2.0
    prune: bool = False
    precision: float | None = None    # the CI's half-width over the mean that ends a cell's repeats (until_sure)
    max_repeats: int | None = None    # the repeats a cell may take at most while not that sure
    try_infeasible: bool = False      # launch a config even when its weights + KV cannot fit (feasible)

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
    slo: dict | None = None           # the [slo] table: search each config's highest load under it (slo_search)

    def to_json(self) -> dict:
        """The campaign file's own shape (what `from_dict` reads back), with None values left out."""
        sweep = {k: v for k, v in self.sweep.to_json().items() if v is not None}
        return {"sweep": sweep, "config": [{"name": n} for n in self.configs],
                "grid": [{"base": g.base, "flags": g.flags} for g in self.grids],
                "policy": self.policy.to_json(), **({"slo": dict(self.slo)} if self.slo else {})}


def _fail(where: str, key: str, expected: str, got: Any = None) -> NoReturn:
    tail = f", got {got!r}" if got is not None else ""
    raise CampaignError(f"{where}: key '{key}': expected {expected}{tail}")


def _positive(where: str, key: str, value: Any, integer: bool = True, allow_none: bool = True) -> Any:
    if value is None and allow_none:
        return None
    kinds = (int,) if integer else (int, float)
    if isinstance(value, bool) or not isinstance(value, kinds) or not math.isfinite(value) or value <= 0:
        _fail(where, key, "a positive whole number" if integer else "a positive number", value)
    return value


def _capped(where: str, key: str, value: Any, cap: int) -> Any:
    if value is not None and value > cap:
        _fail(where, key, f"at most {cap:,}", value)
    return value


def known_flags() -> set[str]:
    """Every flag the launch parser's table knows, as written on a command line (`--port`, `-np`)."""
    from ..servers.launch.table import FLAGS

    out = set()
    for table in FLAGS.values():
        for name in table:
            out.add(f"--{name}")
            if len(name) <= 3:
                out.add(f"-{name}")
    return out


def check_flag_name(where: str, key: str, name: Any) -> str:
    """A grid flag name exactly as a server would read it; anything else (`$(...)`, `/`, `..`) is refused."""
    if not isinstance(name, str) or not (FLAG_NAME.fullmatch(name) or name in known_flags()) or len(name) > 100:
        _fail(where, key, "flag names written as on the command line, e.g. --max-running-requests "
                          "(lower-case letters, digits, '-' and '.')", name)
    return name


def check_config_name(where: str, key: str, name: Any) -> str:
    """A launch config's name (as `gpudeck server list` shows it), never a path."""
    if not isinstance(name, str) or not name.strip() or len(name) > 200 or _BAD_NAME.search(name) \
            or name.strip() in (".", ".."):
        _fail(where, key, "a launch config name as `gpudeck server list` shows it (not a path)", name)
    return name.strip()


def _hosts(where: str, value: Any) -> list[str]:
    """`[policy] hosts`: profile names, each once."""
    if not isinstance(value, list) or not all(isinstance(v, str) and v and not v.startswith("-") for v in value) \
            or len(set(value)) != len(value) or len(value) > 64:
        _fail(where, "policy.hosts", "a list of distinct profile names", value)
    return list(value)


def _min_effect(where: str, value: Any) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0 <= value <= 100:
        _fail(where, "policy.min_effect", "a percentage from 0 to 100", value)
    return float(value)


def _flag(where: str, key: str, value: Any) -> bool:
    if not isinstance(value, bool):
        _fail(where, key, "true or false", value)
    return value


def _until_sure(where: str, policy: Policy, doc: dict, sweep: SweepSpec) -> None:
    """`precision` (a fraction, 0 < p < 1) and `max_repeats` (at least `repeats`, at most 50)."""
    precision, most = doc.get("precision"), doc.get("max_repeats")
    if precision is not None:
        if isinstance(precision, bool) or not isinstance(precision, (int, float)) or not 0 < precision < 1:
            _fail(where, "policy.precision", "a fraction between 0 and 1, e.g. 0.05 for ±5%", precision)
        policy.precision = float(precision)
    if most is not None:
        if policy.precision is None:
            _fail(where, "policy.max_repeats", "set together with policy.precision", most)
        _capped(where, "policy.max_repeats", _positive(where, "policy.max_repeats", most, allow_none=False), 50)
        if most < sweep.repeats:
            _fail(where, "policy.max_repeats", f"at least sweep.repeats ({sweep.repeats})", most)
        policy.max_repeats = int(most)
    elif policy.precision is not None:
        policy.max_repeats = max(sweep.repeats, 10)


def load(path: Path | str, max_cells: int | None = None) -> CampaignSpec:
    """Read a campaign file: a regular file under the size cap, valid TOML, every key checked."""
    where = str(path)
    try:
        raw = read_capped(path, limits.MAX_CAMPAIGN_FILE_BYTES)
    except FileNotFoundError:
        raise CampaignError(f"{where}: cannot read: no such file") from None
    except FileRefused as exc:
        raise CampaignError(str(exc)) from None
    try:
        doc = tomllib.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, tomllib.TOMLDecodeError) as exc:
        raise CampaignError(f"{where}: not valid TOML: {str(exc).splitlines()[0] if str(exc) else exc}") from None
    except RecursionError:
        raise CampaignError(f"{where}: not valid TOML: nested too deep") from None
    spec = from_dict(doc, where, max_cells=max_cells)
    if spec.sweep.dataset is not None:
        spec.sweep.dataset = _dataset_file(where, Path(path).parent, spec.sweep.dataset)
        check_dataset(spec, where)
    return spec


def check_dataset(spec: CampaignSpec, where: str) -> None:
    """The whole prompts file read as every cell's bench will read it (the bench's own reader), so a
    bad line is one line now, before any server is launched, not a failure of each cell after its
    server started."""
    from ..bench.dataset import dataset_format, open_dataset

    name = spec.sweep.dataset
    if name is None:
        return
    try:
        dataset = open_dataset(name, dataset_format(name))
    except ValueError as exc:
        raise CampaignError(f"{where}: key 'sweep.dataset': {exc}") from None
    if spec.sweep.api == "completions" and dataset.has_messages:
        raise CampaignError(f"{where}: key 'sweep.dataset': {name} holds chat messages: "
                            f"set api = \"chat\" in [sweep]")


def _dataset_file(where: str, folder: Path, name: str) -> str:
    """`sweep.dataset` as a full path (a relative one is beside the campaign file): a regular file now."""
    path = Path(name) if Path(name).is_absolute() else folder / name
    if not path.is_file():
        _fail(where, "sweep.dataset", "a prompts file that exists (.jsonl or ShareGPT .json)", name)
    return str(path.resolve())


def from_dict(doc: dict, where: str = "<campaign>", max_cells: int | None = None) -> CampaignSpec:
    if not isinstance(doc, dict):
        _fail(where, "sweep", "a campaign document (a table)", type(doc).__name__)
    for key in doc:
        if key not in ("sweep", "config", "grid", "policy", "slo"):
            _fail(where, key, "one of sweep, config, grid, policy, slo", "unknown key")
    sweep_doc = doc.get("sweep")
    if not isinstance(sweep_doc, dict):
        _fail(where, "sweep", "a [sweep] table with at least `levels`")
    known = {"levels", "input_len", "output_len", "num_prompts", "prompts_per_stream", "api", "model", "url", "slo",
             "repeats", "dataset"}
    for key in sweep_doc:
        if key not in known:
            _fail(where, f"sweep.{key}", "one of " + ", ".join(sorted(known)), "unknown key")
    levels = sweep_doc.get("levels")
    if not isinstance(levels, list) or not levels:
        _fail(where, "sweep.levels", "a list of concurrency levels, e.g. [1, 4, 16]", levels)
    if len(levels) > load_limits.MAX_LEVELS:
        _fail(where, "sweep.levels", f"at most {load_limits.MAX_LEVELS} levels", len(levels))
    for level in levels:
        _capped(where, "sweep.levels", _positive(where, "sweep.levels", level, allow_none=False),
                load_limits.MAX_CONCURRENCY)
    api = sweep_doc.get("api", "completions")
    if api not in ("completions", "chat"):
        _fail(where, "sweep.api", "'completions' or 'chat'", api)
    for key in ("model", "url", "dataset"):
        if sweep_doc.get(key) is not None and (not isinstance(sweep_doc[key], str) or len(sweep_doc[key]) > 2000
                                               or any(c in sweep_doc[key] for c in "\n\r\x00")):
            _fail(where, f"sweep.{key}", "a one-line string", sweep_doc[key])
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
        input_len=_capped(where, "sweep.input_len", _positive(where, "sweep.input_len", sweep_doc.get("input_len", 1024),
                                                              allow_none=False), limits.MAX_TOKENS),
        output_len=_capped(where, "sweep.output_len", _positive(where, "sweep.output_len",
                                                                sweep_doc.get("output_len", 256), allow_none=False),
                           limits.MAX_TOKENS),
        num_prompts=_capped(where, "sweep.num_prompts", _positive(where, "sweep.num_prompts",
                                                                  sweep_doc.get("num_prompts")), load_limits.MAX_PROMPTS),
        prompts_per_stream=_capped(where, "sweep.prompts_per_stream",
                                   _positive(where, "sweep.prompts_per_stream", sweep_doc.get("prompts_per_stream")),
                                   limits.MAX_PROMPTS_PER_STREAM),
        api=api, model=sweep_doc.get("model"), url=url, slo={k: float(v) for k, v in slo.items()},
        repeats=_capped(where, "sweep.repeats", _positive(where, "sweep.repeats", sweep_doc.get("repeats", 3),
                                                          allow_none=False), 50),
        dataset=sweep_doc.get("dataset"))

    configs = []
    config_doc = doc.get("config", [])
    if isinstance(config_doc, list) and len(config_doc) > limits.MAX_CONFIGS:
        _fail(where, "config", f"at most {limits.MAX_CONFIGS} [[config]] entries", len(config_doc))
    for i, entry in enumerate(config_doc if isinstance(config_doc, list) else [None]):
        if not isinstance(entry, dict):
            _fail(where, f"config[{i}].name", "a launch config name (its script name)", entry)
        configs.append(check_config_name(where, f"config[{i}].name", entry.get("name")))
    grids = []
    grid_doc = doc.get("grid", [])
    if isinstance(grid_doc, list) and len(grid_doc) > limits.MAX_CONFIGS:
        _fail(where, "grid", f"at most {limits.MAX_CONFIGS} [[grid]] entries", len(grid_doc))
    for i, entry in enumerate(grid_doc if isinstance(grid_doc, list) else [None]):
        if not isinstance(entry, dict):
            _fail(where, f"grid[{i}].base", "the launch config the grid starts from", entry)
        base = check_config_name(where, f"grid[{i}].base", entry.get("base"))
        flags = entry.get("flags")
        if not isinstance(flags, dict) or not flags:
            _fail(where, f"grid[{i}].flags", 'a table of flag = [values], e.g. { "--cuda-graph-max-bs" = [16, 32] }',
                  flags)
        if len(flags) > limits.MAX_GRID_FLAGS:
            _fail(where, f"grid[{i}].flags", f"at most {limits.MAX_GRID_FLAGS} flags", len(flags))
        for name, values in flags.items():
            check_flag_name(where, f"grid[{i}].flags", name)
            if not isinstance(values, list) or not values or not all(
                    isinstance(v, (int, float, str)) and not isinstance(v, bool) for v in values):
                _fail(where, f"grid[{i}].flags.{name}", "a non-empty list of numbers or strings", values)
            if len(values) > limits.MAX_GRID_VALUES:
                _fail(where, f"grid[{i}].flags.{name}", f"at most {limits.MAX_GRID_VALUES} values", len(values))
            for v in values:
                if isinstance(v, str) and (not v or len(v) > 1000 or any(c in v for c in "\n\r\x00")):
                    _fail(where, f"grid[{i}].flags.{name}", "one-line values of at most 1000 characters", v)
                if isinstance(v, float) and not math.isfinite(v):
                    _fail(where, f"grid[{i}].flags.{name}", "finite numbers", v)
        grids.append(GridSpec(base=base, flags={k: list(v) for k, v in flags.items()}))
    if not configs and not grids:
        _fail(where, "config", "at least one [[config]] or [[grid]]")

    policy_doc = doc.get("policy", {})
    if not isinstance(policy_doc, dict):
        _fail(where, "policy", "a [policy] table", policy_doc)
    pknown = {"ready_timeout_s", "on_crash", "gpu_idle_timeout_s", "gpu_idle_mib", "stop_at_first_slo", "max_cells",
              "parallel", "hosts", "min_effect", "prune", "precision", "max_repeats",
              "try_infeasible"}
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
        prune=_flag(where, "policy.prune", policy_doc.get("prune", False)),
        try_infeasible=_flag(where, "policy.try_infeasible", policy_doc.get("try_infeasible", False)),
        max_cells=_capped(where, "policy.max_cells", _positive(where, "policy.max_cells",
                                                               policy_doc.get("max_cells", limits.MAX_CELLS),
                                                               allow_none=False), limits.MAX_CELLS_CEILING),
        parallel=min(int(_positive(where, "policy.parallel", policy_doc.get("parallel", 1), allow_none=False)), 64),
        hosts=_hosts(where, policy_doc.get("hosts", [])))
    _until_sure(where, policy, policy_doc, sweep)
    if max_cells is not None:    # the command line's --max-cells, kept with the campaign
        policy.max_cells = _capped(where, "--max-cells", _positive(where, "--max-cells", max_cells, allow_none=False),
                                   limits.MAX_CELLS_CEILING)
    if sweep.prompts_per_stream and sweep.prompts_per_stream * max(sweep.levels) > load_limits.MAX_PROMPTS:
        _fail(where, "sweep.prompts_per_stream", f"at most {load_limits.MAX_PROMPTS:,} prompts at the highest level",
              sweep.prompts_per_stream * max(sweep.levels))
    cells = len(configs) + sum(math.prod(len(v) for v in g.flags.values()) for g in grids)
    if cells > policy.max_cells:
        raise CampaignError(f"{where}: {cells:,} cells, more than the limit of {policy.max_cells:,} "
                            "(raise it with [policy] max_cells or --max-cells)")
    from .slo_search import SloError, parse as parse_slo

    try:
        parse_slo(doc.get("slo"), where)
    except SloError as exc:
        raise CampaignError(str(exc)) from None
    return CampaignSpec(sweep=sweep, configs=configs, grids=grids, policy=policy, source=where,
                        slo=dict(doc["slo"]) if doc.get("slo") else None)
