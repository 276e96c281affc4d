"""Where an SSH profile goes and which host keys it trusts, resolved as OpenSSH would:
through the ssh config (HostName, Port, User, HostKeyAlias) and known_hosts, for
every command, `profiles trust` and `profiles check` alike."""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from profiles.profile import Profile

from .base import HostError
from .ssh_import import import_asyncssh

@dataclass
class SSHTarget:
    """Where a profile's SSH connection goes, resolved once through the ssh config
    (the profile's config_file, else ~/.ssh/config) for every command alike."""

    host: str  # HostName
    port: int
    user: str | None
    key_name: str  # what known_hosts is searched for: HostKeyAlias, else host or [host]:port
    config: list[str]  # ssh_config files read

    @property
    def where(self) -> str:
        return f"{self.host}:{self.port}"


def ssh_config_files(profile: Profile) -> list[str]:
    s = profile.ssh
    if s.config_file:
        return [str(Path(s.config_file).expanduser())]
    default = Path("~/.ssh/config").expanduser()
    return [str(default)] if os.access(default, os.R_OK) else []


def ssh_target(profile: Profile) -> SSHTarget:
    """The one resolver: `profiles trust`, `profiles check`, the TUI and every command use it."""
    asyncssh = import_asyncssh()

    s = profile.ssh
    config = ssh_config_files(profile)
    values: dict = {}
    if config:
        # asyncssh reads ~/.ssh/config by itself only inside connect(); name it explicitly
        try:
            parsed = asyncssh.SSHClientConnectionOptions(host=s.host, config=config).config
        except (OSError, ValueError, asyncssh.Error) as exc:
            raise HostError("other", f"cannot read ssh config {', '.join(config)}: {exc}") from None
        values = {key: parsed.get(key) for key in ("Hostname", "Port", "User", "HostKeyAlias")}
    host = str(values.get("Hostname") or s.host)
    port = int(s.port or values.get("Port") or 22)
    user = s.user or values.get("User")
    alias = values.get("HostKeyAlias")
    key_name = str(alias) if alias else (host if port == 22 else f"[{host}]:{port}")
    return SSHTarget(host=host, port=port, user=str(user) if user else None, key_name=key_name, config=config)


def known_hosts_files() -> list[Path]:
    from profiles import paths

    return [p for p in (paths.known_hosts_file(), Path("~/.ssh/known_hosts").expanduser()) if p.is_file()]


@dataclass
class KnownKeys:
    host_keys: list
    ca_keys: list
    revoked: list
    sources: dict  # fingerprint -> file it came from


def known_keys(target: SSHTarget) -> KnownKeys:
    """The keys known_hosts holds for the target's name, as OpenSSH looks them up:
    by HostKeyAlias or by host name (`[host]:port` off port 22), never by the
    address it resolves to, and never falling back to another port."""
    asyncssh = import_asyncssh()

    found = KnownKeys([], [], [], {})
    for path in known_hosts_files():
        try:
            table = asyncssh.read_known_hosts(str(path))
        except (OSError, ValueError, asyncssh.Error):
            continue
        host_keys, ca_keys, revoked = table.match(target.key_name, "", None)[:3]
        found.host_keys.extend(host_keys)
        found.ca_keys.extend(ca_keys)
        found.revoked.extend(revoked)
        for key in host_keys:
            found.sources.setdefault(key.get_fingerprint(), str(path))
    return found


def resolve_ssh_options(profile: Profile) -> dict:
    """asyncssh.connect keyword arguments for a profile (no secrets involved)."""
    s = profile.ssh
    target = ssh_target(profile)
    known = known_keys(target)
    opts: dict = {
        # our own lookup (never None: that would trust any key)
        "known_hosts": (known.host_keys, known.ca_keys, known.revoked),
        "keepalive_interval": 15,
        "keepalive_count_max": 3,
        "connect_timeout": s.connect_timeout_s,
        "port": target.port,
        "config": target.config,
    }
    if target.user:
        opts["username"] = target.user
    if s.identity_file:
        opts["client_keys"] = [str(Path(s.identity_file).expanduser())]
    return opts


def resolved_endpoint(profile: Profile) -> tuple[str, int]:
    """HostName and Port as ~/.ssh/config (or the profile's config file) resolves them."""
    target = ssh_target(profile)
    return target.host, target.port


def known_hosts_line(key_name: str, key) -> str:
    """One known_hosts line for `key_name` (a host, `[host]:port` or a HostKeyAlias)."""
    algorithm, blob = key.export_public_key("openssh").decode().split()[:2]
    return f"{key_name} {algorithm} {blob}\n"


def without_entries_for(text: str, key_name: str) -> tuple[str, int]:
    """known_hosts text minus the plain (unhashed) lines whose patterns name `key_name`;
    returns the text and how many lines went. Markers (@revoked, @cert-authority) stay."""
    kept, dropped = [], 0
    for line in text.splitlines(keepends=True):
        fields = line.split()
        if fields and not fields[0].startswith(("#", "@", "|")) and key_name in fields[0].split(","):
            dropped += 1
            continue
        kept.append(line)
    return "".join(kept), dropped
