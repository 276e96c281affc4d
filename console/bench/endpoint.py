"""Facts about an endpoint the setup form needs: its models, and whether it is loopback-only."""
from __future__ import annotations

import ipaddress
from urllib.parse import urlsplit, urlunsplit

import httpx


async def list_models(url: str, timeout: float = 3.0) -> list[str]:
    """Model ids from `/v1/models`; empty when the server has none or can't be reached."""
    try:
        async with httpx.AsyncClient(base_url=url, timeout=timeout) as client:
            data = (await client.get("/v1/models")).json().get("data") or []
    except (httpx.HTTPError, ValueError, AttributeError):
        return []
    return [m["id"] for m in data if isinstance(m, dict) and isinstance(m.get("id"), str)]


def loopback_port(url: str) -> int | None:
    """The port when the URL points at the host's own loopback, else None."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    try:
        is_loop = host == "localhost" or ipaddress.ip_address(host).is_loopback
    except ValueError:
        is_loop = False
    if not is_loop:
        return None
    return parts.port or (443 if parts.scheme == "https" else 80)


def with_port(url: str, port: int) -> str:
    """The same URL on 127.0.0.1:port (the local end of a tunnel)."""
    parts = urlsplit(url)
    return urlunsplit((parts.scheme, f"127.0.0.1:{port}", parts.path, parts.query, parts.fragment))


def running_server_url(profile: str) -> str | None:
    """The URL of the newest server gpudeck launched for this profile that is still live."""
    from console.servers import records

    for record in records.load_all(profile):
        if record.live and record.port:
            return f"http://127.0.0.1:{record.port}"
    return None
