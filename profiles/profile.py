"""A host profile: how to reach one host and what gpudeck knows about it.

The TOML layout (one file per host, `<config>/profiles/<name>.toml`):

    transport = "ssh"                 # or "local"
    description = "8x RTX PRO 6000, PCIe"
    [ssh]      host, user, port, identity_file, config_file, connect_timeout_s, command_timeout_s
    [server]   url, scripts_dir, log_dir, configs = [...], kill_grace_s
    [model]    name, config, quant_config, quant, kv_dtype
    [gpu]      name, count, sample_interval_ms, smi_command (argv used instead of
               `nvidia-smi`, e.g. a stand-in: ["python3", "/opt/fake-smi.py"])
    [bench]    concurrency ("1,2,10"), input_len, output_len, num_prompts (Bench tab defaults)
    [ui]       simulated (bool: everything from this host is labelled SIMULATED)
    [prometheus] url, selector, bearer_token_env, bearer_token_file, basic_user,
               basic_password_env, dcgm_job, scrape_interval_s, timeout_s, max_answer_mb (transport = "prometheus":
               a fleet read from Prometheus and NVIDIA's DCGM exporter; secrets come
               from the environment or a file, never from this file)
    [slurm]    enabled, partition, account (a Slurm cluster whose login node is this
               profile's host, local or over SSH: a launch is an sbatch job)

`[ssh] host` may be a plain host name or address, or an alias from
`~/.ssh/config`; user, port and identity file then come from that file.
No secrets live here: keys come from the agent or from `~/.ssh/config`.
"""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any, Callable


class ProfileError(Exception):
    """A profile is invalid; the message names the file, the key and what was expected."""


_TYPES: dict[str, tuple[type, ...]] = {
    "str": (str,),
    "int": (int,),
    "num": (int, float),
    "bool": (bool,),
    "list[str]": (list,),
}


@dataclass
class SSHSection:
    host: str | None = None
    user: str | None = None
    port: int | None = None
    identity_file: str | None = None
    config_file: str | None = None
    connect_timeout_s: float = 10.0
    command_timeout_s: float = 60.0


@dataclass
class ServerSection:
    url: str | None = None
    scripts_dir: str | None = None
    log_dir: str | None = None
    configs: list[str] = field(default_factory=list)
    kill_grace_s: float = 30.0


@dataclass
class ModelSection:
    name: str | None = None
    config: str | None = None
    quant_config: str | None = None
    quant: str | None = None
    kv_dtype: str | None = None


@dataclass
class GPUSection:
    name: str | None = None
    count: int | None = None
    sample_interval_ms: int = 1000
    smi_command: list[str] = field(default_factory=list)


@dataclass
class BenchSection:
    """Defaults for the Bench tab's form (the CLI takes flags instead)."""

    concurrency: str | None = None  # e.g. "1,2,10,64,256,512"
    input_len: int | None = None
    output_len: int | None = None
    num_prompts: str | None = None  # "64", or "2c" for twice the concurrency


@dataclass
class UISection:
    simulated: bool = False


@dataclass
class PrometheusSection:
    url: str | None = None
    selector: str | None = None
    bearer_token_env: str | None = None
    bearer_token_file: str | None = None
    basic_user: str | None = None
    basic_password_env: str | None = None
    dcgm_job: str | None = None
    scrape_interval_s: float | None = None
    timeout_s: float | None = None        # one request, whole (default 10)
    max_answer_mb: float | None = None    # a larger answer is refused (default 64)


@dataclass
class SlurmSection:
    """A Slurm cluster reached through this profile's host (its login node)."""

    enabled: bool = False
    partition: str | None = None
    account: str | None = None


_SECTIONS: dict[str, type] = {
    "ssh": SSHSection,
    "server": ServerSection,
    "model": ModelSection,
    "gpu": GPUSection,
    "bench": BenchSection,
    "ui": UISection,
    "prometheus": PrometheusSection,
    "slurm": SlurmSection,
}

_SCHEMA: dict[str, dict[str, str]] = {
    "ssh": {"host": "str", "user": "str", "port": "int", "identity_file": "str",
            "config_file": "str", "connect_timeout_s": "num", "command_timeout_s": "num"},
    "server": {"url": "str", "scripts_dir": "str", "log_dir": "str", "configs": "list[str]",
               "kill_grace_s": "num"},
    "model": {"name": "str", "config": "str", "quant_config": "str", "quant": "str",
              "kv_dtype": "str"},
    "gpu": {"name": "str", "count": "int", "sample_interval_ms": "int", "smi_command": "list[str]"},
    "bench": {"concurrency": "str", "input_len": "int", "output_len": "int", "num_prompts": "str"},
    "ui": {"simulated": "bool"},
    "prometheus": {"url": "str", "selector": "str", "bearer_token_env": "str", "bearer_token_file": "str",
                   "basic_user": "str", "basic_password_env": "str", "dcgm_job": "str",
                   "scrape_interval_s": "num", "timeout_s": "num", "max_answer_mb": "num"},
    "slurm": {"enabled": "bool", "partition": "str", "account": "str"},
}
_TOP: dict[str, str] = {"transport": "str", "description": "str"}

# Values that become arguments of commands on the host: a leading `-` would make
# one an option (`find -delete`), a control character breaks lines and logs.
_PATH_KEYS = {"ssh.identity_file", "ssh.config_file", "server.scripts_dir", "server.log_dir",
              "server.configs", "model.config", "model.quant_config"}
_NAME_KEYS = {"ssh.host", "ssh.user", "slurm.partition", "slurm.account"}

# Numbers with a range: key -> (test, what is expected).
_RANGES: dict[str, tuple[Callable[[float], bool], str]] = {
    "ssh.connect_timeout_s": (lambda v: 0 < v < math.inf, "a finite number of seconds above 0"),
    "ssh.command_timeout_s": (lambda v: 0 < v < math.inf, "a finite number of seconds above 0"),
    "server.kill_grace_s": (lambda v: 0 <= v < math.inf, "a finite number of seconds, 0 or more"),
    "gpu.sample_interval_ms": (lambda v: v > 0, "a number of milliseconds above 0"),
    "gpu.count": (lambda v: v >= 0, "a count of 0 or more"),
    "bench.input_len": (lambda v: v > 0, "a token count above 0"),
    "bench.output_len": (lambda v: v > 0, "a token count above 0"),
}


def _bad_argument(value: str) -> str | None:
    """Why a string can't be handed to a command as a path or name; None if it can."""
    if value.startswith("-"):
        return "a value that does not start with '-'"
    if _has_control(value):
        return "a value without control characters (newline, tab, escape)"
    return None


def _has_control(value: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in value)


_TRANSPORTS = ("local", "ssh", "prometheus")


@dataclass
class Profile:
    name: str
    transport: str = "local"
    description: str | None = None
    ssh: SSHSection = field(default_factory=SSHSection)
    server: ServerSection = field(default_factory=ServerSection)
    model: ModelSection = field(default_factory=ModelSection)
    gpu: GPUSection = field(default_factory=GPUSection)
    bench: BenchSection = field(default_factory=BenchSection)
    ui: UISection = field(default_factory=UISection)
    prometheus: PrometheusSection = field(default_factory=PrometheusSection)
    slurm: SlurmSection = field(default_factory=SlurmSection)

    @property
    def is_local(self) -> bool:
        return self.transport == "local"

    @property
    def is_prometheus(self) -> bool:
        """A fleet read from Prometheus: no shell on any host, GPUs from DCGM series."""
        return self.transport == "prometheus"

    @property
    def is_slurm(self) -> bool:
        """A Slurm cluster: its host is the login node, launches are jobs, its GPUs the partition's."""
        return self.slurm.enabled and self.transport in ("local", "ssh")

    @property
    def target(self) -> str:
        """How the operator reads this host's address: `local` or `ssh user@host:port`."""
        if self.is_slurm:
            return f"slurm {self.slurm.partition or '(default partition)'} via {self._host_target()}"
        return self._host_target()

    def _host_target(self) -> str:
        if self.is_local:
            return "local"
        if self.is_prometheus:
            return f"prometheus {self.prometheus.url}"
        s = self.ssh
        who = f"{s.user}@" if s.user else ""
        port = f":{s.port}" if s.port else ""
        return f"ssh {who}{s.host}{port}"

    def to_toml_dict(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"transport": self.transport}
        if self.description:
            doc["description"] = self.description
        for section in _SECTIONS:
            values = asdict(getattr(self, section))
            defaults = asdict(_SECTIONS[section]())
            kept = {k: v for k, v in values.items() if v is not None and v != defaults[k]}
            if kept:
                doc[section] = kept
        return doc

    def to_json(self) -> dict[str, Any]:
        doc: dict[str, Any] = {"name": self.name, "transport": self.transport, "target": self.target,
                               "description": self.description}
        for section in _SECTIONS:
            doc[section] = asdict(getattr(self, section))
        return doc


def profile_from_dict(name: str, doc: dict[str, Any], source: Path | str = "<profile>") -> Profile:
    """Validate a parsed TOML document; raise `ProfileError` on the first problem."""
    where = str(source)

    def fail(key: str, expected: str, got: Any = None) -> None:
        tail = f", got {got!r}" if got is not None else ""
        raise ProfileError(f"{where}: key '{key}': expected {expected}{tail}")

    for key in doc:
        if key not in _TOP and key not in _SECTIONS and key != "name":
            fail(key, "one of " + ", ".join(sorted([*_TOP, *_SECTIONS])), "unknown key")
    transport = doc.get("transport", "local")
    if transport not in _TRANSPORTS:
        fail("transport", "'local', 'ssh' or 'prometheus'", transport)
    description = doc.get("description")
    if description is not None and not isinstance(description, str):
        fail("description", "a string", description)

    sections: dict[str, Any] = {}
    for section, cls in _SECTIONS.items():
        raw = doc.get(section, {})
        if not isinstance(raw, dict):
            fail(section, "a table [" + section + "]", raw)
        schema = _SCHEMA[section]
        values: dict[str, Any] = {}
        for key, value in raw.items():
            dotted = f"{section}.{key}"
            if key not in schema:
                fail(dotted, "one of " + ", ".join(schema), "unknown key")
            kind = schema[key]
            ok = isinstance(value, _TYPES[kind]) and not (kind != "bool" and isinstance(value, bool))
            if kind == "list[str]" and ok:
                ok = all(isinstance(v, str) for v in value)
            if not ok:
                fail(dotted, {"str": "a string", "int": "an integer", "num": "a number",
                              "bool": "true or false", "list[str]": "a list of strings"}[kind], value)
            if kind == "num" and not math.isfinite(value) and dotted not in _RANGES:
                fail(dotted, "a finite number", value)
            if dotted in _RANGES and not _RANGES[dotted][0](value):
                fail(dotted, _RANGES[dotted][1], value)
            if dotted in _PATH_KEYS or dotted in _NAME_KEYS:
                for item in value if isinstance(value, list) else [value]:
                    why = _bad_argument(item)
                    if why:
                        fail(dotted, why, item)
            if dotted == "gpu.smi_command" and value:  # a command: its name can't be an option
                if value[0].startswith("-") or any(_has_control(v) for v in value):
                    fail(dotted, "a command whose name does not start with '-', without control characters",
                         value)
            values[key] = float(value) if kind == "num" else value
        sections[section] = cls(**values)

    if transport == "ssh" and not sections["ssh"].host:
        fail("ssh.host", "a host name, address or ~/.ssh/config alias (required for transport = 'ssh')")
    if transport == "prometheus":
        prom = sections["prometheus"]
        if not prom.url or not prom.url.startswith(("http://", "https://")):
            fail("prometheus.url", "an http:// or https:// URL (required for transport = 'prometheus')", prom.url)
        if prom.selector:
            from .prom_selector import check_selector
            problem = check_selector(prom.selector)
            if problem:
                fail("prometheus.selector", "a label selector such as '{cluster=\"a\"}'", prom.selector)
        if prom.scrape_interval_s is not None and not 0 < prom.scrape_interval_s < 86400:
            fail("prometheus.scrape_interval_s", "seconds between 0 and 86400", prom.scrape_interval_s)
        if prom.timeout_s is not None and not 0 < prom.timeout_s <= 600:
            fail("prometheus.timeout_s", "seconds between 0 and 600", prom.timeout_s)
        if prom.max_answer_mb is not None and not 0 < prom.max_answer_mb <= 4096:
            fail("prometheus.max_answer_mb", "megabytes between 0 and 4096", prom.max_answer_mb)
    if sections["slurm"].enabled and transport == "prometheus":
        fail("slurm.enabled", "a login node reached locally or over SSH (transport 'local' or 'ssh')", transport)
    port = sections["ssh"].port
    if port is not None and not 0 < port < 65536:
        fail("ssh.port", "a port between 1 and 65535", port)
    return Profile(name=name, transport=transport, description=description, **sections)
