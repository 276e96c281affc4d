"""Which server a sweep targets, and how this machine reaches it.

The Bench tab (through its host's runtime) and `gpudeck bench` both ask here,
so a sweep goes to the same place whichever started it:

  * with no URL named, the profile's `[server] url`, else the newest live
    server gpudeck launched for the profile (`default_url`);
  * a loopback URL of a remote (SSH) host goes through a tunnel; on a Slurm
    profile the server listens on its job's head node, not on the login
    node's own loopback: the tunnel leads there, and a login node that is
    this machine connects to the head node directly (`route`).

A campaign's sweeps ask here too.
"""
from __future__ import annotations

from dataclasses import dataclass

from .endpoint import loopback_port, on_host, running_server_url, with_port


def default_url(profile: str, configured: str | None) -> str | None:
    """The URL a sweep on `profile` targets when none is named (`configured`: its [server] url)."""
    return configured or running_server_url(profile)


@dataclass(frozen=True)
class Route:
    url: str                    # what this machine connects to
    tunnelled: bool = False
    server_url: str | None = None   # the server's own URL, when `url` is a tunnel's local end
    server_port: int | None = None  # the server's port on its host, idem


async def route(host, profile: str, backend, url: str, head: str | None = None) -> Route:
    """How this machine reaches `url` as `host` sees it (a tunnel opened when one is needed).

    `backend` is the profile's launch backend (`servers.backend.backend_for`): it says where a server
    listens when not on the host itself (a Slurm job's head node, reached through the login node).
    `head`: that node, when the caller knows which job serves the URL (a campaign lane does; two
    lanes' jobs may share a port); else the backend finds it by the URL's port."""
    port = loopback_port(url)
    if port is None:
        return Route(url)
    head = head or backend.server_node(profile, port)
    if not host.tunnelled:
        return Route(on_host(url, head) if head else url)
    local = await host.forward_port(port, head or "127.0.0.1")
    return Route(with_port(url, local), True, url, port)


class NotRun(Exception):
    """A sweep that cannot begin (no way to its server, nowhere to save it); `usage` when the
    profile itself is the problem."""

    def __init__(self, message: str, usage: bool = False):
        super().__init__(message)
        self.usage = usage


async def route_for_profile(profile: str, url: str):
    """`route` for a profile known by name (the load generator's own process): the host is opened
    only for a loopback URL. Returns the route and the host to close afterwards (None if none)."""
    if loopback_port(url) is None or profile == "local":
        return Route(url), None
    from ..hosts import HostError
    from ..session import HostSession
    from profiles import store
    from profiles.profile import ProfileError

    try:
        session = HostSession.open(store.load(profile))
    except (ProfileError, ValueError, OSError) as exc:
        raise NotRun(f"profile {profile!r}: {exc}", usage=True) from None
    try:
        from ..servers.backend import backend_for

        found = await route(session.host, profile, backend_for(session.profile), url)
    except (HostError, OSError, Exception) as exc:  # noqa: BLE001 - any SSH failure is one line
        await session.host.close()
        raise NotRun(f"cannot open an SSH tunnel to {url} on {profile}: {exc}") from None
    if not found.tunnelled:
        await session.host.close()
        return found, None
    return found, session.host
