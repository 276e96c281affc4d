"""What is known of a host's environment without running a user's script: read once per host.

Launch scripts are parsed, never run, so `$HOME` in a script can only be
expanded with the value the host itself reports. It is read once over the
host and kept with it; a host that cannot be asked gives an empty mapping
(variables stay unresolved rather than guessed).
"""
from __future__ import annotations

import weakref

from .base import Host, HostError

KNOWN = ("HOME", "USER", "LOGNAME")
_CACHE: "weakref.WeakKeyDictionary[Host, dict[str, str]]" = weakref.WeakKeyDictionary()


async def remote_environ(host: Host) -> dict[str, str]:
    """HOME, USER and LOGNAME as the host's non-interactive shell sees them (empty ones left out)."""
    cached = _CACHE.get(host)
    if cached is not None:
        return dict(cached)
    script = "".join(f'printf "%s\\0" "${name}"; ' for name in KNOWN)
    try:
        result = await host.run(["sh", "-c", script], timeout=15)
    except HostError:
        return {}
    if not result.ok:
        return {}
    values = result.stdout.split("\0")
    found = {name: value for name, value in zip(KNOWN, values) if value}
    _CACHE[host] = found
    return dict(found)
