"""Adding a host from the console: the same steps as `profiles add`, `profiles trust`, `profiles check`.

Plain functions, no UI: the host switcher's form calls them (in a thread or
as coroutines) and shows what they return.
"""
from __future__ import annotations

from pathlib import Path

from profiles import paths, store
from profiles.atomic import write_atomic
from profiles.profile import Profile, ProfileError, profile_from_dict


class SetupError(ValueError):
    """A value the operator typed that cannot become a profile; the message says which and why."""


def new_ssh_profile(name: str, target: str, identity_file: str = "", scripts_dir: str = "",
                    url: str = "") -> Profile:
    """Validate and save a new SSH profile; SetupError on a bad or taken name or target."""
    from ..commands.kit import CLIError
    from ..commands.profiles import parse_ssh_target

    name = name.strip()
    try:
        paths.check_name(name)
    except ValueError as exc:
        raise SetupError(str(exc)) from None
    if store.exists(name):
        raise SetupError(f"profile {name!r} exists already")
    try:
        user, host, port = parse_ssh_target(target.strip())
    except CLIError as exc:
        raise SetupError(str(exc).replace("--ssh target", "ssh target")) from None
    ssh = {k: v for k, v in {"host": host, "user": user, "port": port,
                            "identity_file": identity_file.strip() or None}.items() if v is not None}
    doc: dict = {"transport": "ssh", "ssh": ssh}
    server = {k: v.strip() for k, v in {"scripts_dir": scripts_dir, "url": url}.items() if v.strip()}
    if server:
        doc["server"] = server
    try:
        profile = profile_from_dict(name, doc, "<host switcher>")
    except ProfileError as exc:
        raise SetupError(str(exc)) from None
    store.save(profile)
    return profile


def trust_host_key(key_name: str, key) -> Path:
    """Add the key the operator accepted to gpudeck's known_hosts (once), under the name
    OpenSSH looks it up by (HostKeyAlias, else the host, `[host]:port` off port 22)."""
    from .ssh_config import known_hosts_line

    path = paths.known_hosts_file()
    existing = path.read_text() if path.exists() else ""
    line = known_hosts_line(key_name, key)
    if line not in existing:
        write_atomic(path, existing + line)
    return path
