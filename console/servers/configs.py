"""Launch configs: the scripts a profile names, or that its scripts_dir holds."""
from __future__ import annotations

import posixpath
import re
from dataclasses import dataclass, field
from typing import Any

from ..hosts import HostError
from ..session import HostSession
from .launching import absolute

_PORT = re.compile(r"--port[= ]+(\d+)")


@dataclass
class ServerConfig:
    name: str
    script: str
    text: str | None = None
    flags: dict[str, Any] = field(default_factory=dict)
    warnings: list[str] = field(default_factory=list)
    error: str | None = None
    parsed: object | None = None  # console.servers.launch.LaunchConfig (what the script text says)

    @property
    def port(self) -> int | None:
        value = self.flags.get("port")
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.isdigit():
            return int(value)
        found = _PORT.search(self.text or "")
        return int(found.group(1)) if found else None

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "script": self.script, "flags": self.flags,
                "warnings": self.warnings, "error": self.error, "port": self.port}


def config_name(script: str) -> str:
    base = posixpath.basename(script)
    return base[:-3] if base.endswith(".sh") else base


async def discover(session: HostSession) -> list[ServerConfig]:
    """Every config of the profile, with its script text read and its flags parsed."""
    server = session.profile.server
    host = session.host
    # Every path is made absolute first: `find` reads a leading `-` as an expression
    # even after `--` (`find -- -delete` deletes), so a `/` is the only sure guard.
    scripts_dir = await absolute(host, server.scripts_dir) if server.scripts_dir else None
    paths: list[str] = []
    for entry in server.configs:
        if scripts_dir and not entry.startswith(("/", "~")):
            entry = posixpath.join(scripts_dir, entry)
        paths.append(await absolute(host, entry))
    if scripts_dir:
        listing = await host.run(["find", scripts_dir, "-maxdepth", "1", "-type", "f", "-name", "*.sh", "-print0"],
                                 timeout=20)
        for line in sorted(listing.stdout.split("\0")):  # a file name may hold a newline
            # a hidden script is no config of the operator's: a campaign's derived scripts live there
            if line and line not in paths and not posixpath.basename(line).startswith("."):
                paths.append(line)
    configs = []
    for path in paths:
        configs.append(await read_config(session, path))
    return configs


async def read_config(session: HostSession, script: str) -> ServerConfig:
    config = ServerConfig(name=config_name(script), script=script)
    try:
        result = await session.host.run(["cat", "--", script], timeout=20)
    except HostError as exc:
        config.error = str(exc)
        return config
    if not result.ok:
        config.error = result.stderr.strip() or f"cannot read {script}"
        return config
    config.text = result.stdout
    from ..hosts.remote_env import remote_environ

    parse_flags(config, await remote_environ(session.host))
    return config


def parse_flags(config: ServerConfig, environ: dict[str, str] | None = None) -> None:
    """Fill flags and promise warnings from the script text (console.servers.launch parses)."""
    from . import launch

    try:
        parsed = launch.parse_script(config.text or "", name=posixpath.basename(config.script),
                                           environ=environ)
    except launch.LaunchConfigError as exc:
        config.error = str(exc)
        return
    config.parsed = parsed
    config.flags = {key: value for key, value in parsed.flags.items() if value is not None}
    config.warnings = list(parsed.warnings)
    from ..slurm.promise import node_warnings  # a job script: its node count against its parallelism

    config.warnings += node_warnings(config.text or "", config.flags, parsed.raw_flags)


def find(configs: list[ServerConfig], name: str) -> ServerConfig | None:
    for config in configs:
        if name in (config.name, config.script, posixpath.basename(config.script)):
            return config
    return None
