"""The servers a `--hosts` campaign's lanes reach: one machine and port per lane, never shared.

Profiles are names; a server is a machine and a port. Two profiles can name
one machine (an SSH alias and its address, two local profiles), and each lane
launches, sweeps and stops a server on its port, so two lanes on one endpoint
would stop each other's servers and measure each other's load. The machine is
told the way the campaign lock tells it (`lock.host_identity`); a port the
profile and the campaign file do not name cannot be compared, so it is left
to the scripts.
"""
from __future__ import annotations

from . import lock as locks


async def clash(profiles: list, spec: dict, known: dict[str, str] | None = None) -> str | None:
    """One line naming two lanes that would share a server (or one profile named twice), else None.
    `known`: machine identities already read, by profile name (each SSH one costs a connection)."""
    seen: dict[tuple[str, int], str] = {}
    names: set[str] = set()
    for profile in profiles:
        if profile.name in names:
            return f"--hosts names profile {profile.name} twice; one lane per profile"
        names.add(profile.name)
        port = locks.lock_port(profile, spec)
        if port is None:
            continue
        key = ((known or {}).get(profile.name) or await locks.host_identity(profile), port)
        if key in seen:
            return (f"--hosts: profiles {seen[key]} and {profile.name} reach the same server (one machine, "
                    f"port {port}); two lanes would fight over it: name one of them")
        seen[key] = profile.name
    return None
