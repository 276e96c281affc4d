"""One way to run commands on a host, local or over SSH, and what is learned about a host.

Every command is an argv list: locally exec'd directly (`local.py`), over SSH
quoted once and shipped base64-encoded (`base.remote_command`, `ssh.py`).
Where an SSH profile goes and which keys it trusts is `ssh_config.py`; port
forwards are `tunnel.py`. Reaching a host for the first time (`profiles
check`, the host switcher's add form) is `probe.py` and `setup.py`; what the
host reports of its own environment is `remote_env.py`.
"""
from __future__ import annotations

from profiles.profile import Profile

from .base import (CONNECTED, CONNECTING, DOWN, IDLE, RECONNECTING, Host, HostError, HostKeyChanged,
                   HostKeyUnknown, HostStatus, LineStream, RunResult, remote_command)
from .local import LocalHost
from .ssh import SSHHost, fetch_host_key
from .ssh_config import SSHTarget, known_hosts_line, known_keys, resolved_endpoint, ssh_target, without_entries_for

__all__ = ["CONNECTED", "CONNECTING", "DOWN", "IDLE", "RECONNECTING", "Host", "HostError", "HostKeyChanged",
           "HostKeyUnknown", "HostStatus", "LineStream", "LocalHost", "RunResult", "SSHHost", "SSHTarget",
           "fetch_host_key", "host_for", "known_hosts_line", "known_keys", "remote_command", "resolved_endpoint",
           "ssh_target", "without_entries_for"]


def host_for(profile: Profile, measure_latency: bool = True) -> Host:
    """The host a profile names: this machine, or an SSH connection (`measure_latency=False`:
    no ping on connecting, for a command that runs once and leaves)."""
    return LocalHost(profile.name) if profile.is_local else SSHHost(profile, measure_latency)
