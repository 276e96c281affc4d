"""Where gpudeck keeps its files.

`GPUDECK_HOME` overrides everything (tests and the demo use it so they never
touch the operator's real home); otherwise the platform's config and data dirs.
"""
from __future__ import annotations

import os
import re
from pathlib import Path

_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")


def _home_override() -> Path | None:
    value = os.environ.get("GPUDECK_HOME")
    return Path(value).expanduser() if value else None


def config_dir() -> Path:
    """Profiles, the user's GPU catalogue additions, gpudeck's known_hosts."""
    home = _home_override()
    if home is not None:
        return home / "config"
    from platformdirs import user_config_dir

    return Path(user_config_dir("gpudeck"))


def data_dir() -> Path:
    """Per-profile data: tasks, runs, crashes, launch records."""
    home = _home_override()
    if home is not None:
        return home / "data"
    from platformdirs import user_data_dir

    return Path(user_data_dir("gpudeck"))


def profiles_dir() -> Path:
    return config_dir() / "profiles"


def profile_file(name: str) -> Path:
    return profiles_dir() / f"{check_name(name)}.toml"


def profile_data_dir(name: str) -> Path:
    """`tasks.toml`, `runs/`, `crashes/`, `servers/` of one profile live here."""
    return data_dir() / "profiles" / check_name(name)


def known_hosts_file() -> Path:
    """Host keys the operator trusted with `gpudeck profiles trust`."""
    return config_dir() / "known_hosts"


def check_name(name: str) -> str:
    """Profile names become file names: keep them to a safe alphabet."""
    if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
        raise ValueError(
            f"bad profile name {name!r}: use letters, digits, '.', '_' or '-' (max 64)"
        )
    return name
