"""Facts about an endpoint the setup form needs: its models, and whether it is loopback-only."""
from __future__ import annotations

import asyncio
import ipaddress
import json
from urllib.parse import urlsplit, urlunsplit

MAX_MODELS_BYTES = 1 << 20   # a model list is a few KiB; more is not one


async def list_models(url: str, timeout: float = 3.0) -> list[str]:
    """Model ids from `/v1/models`; empty when the server has none or can't be reached.

    Asked with the bench's own HTTP/1.1 client: the Bench tab asks on opening,
    and an HTTP library's import would cost the console's first frame more
    than the request does.
    """
    from .http1 import ResponseError, StreamingResponse, Target

    try:
        target = Target(url)
    except ValueError:
        return []
    loop = asyncio.get_running_loop()
    done = loop.create_future()
    body = bytearray()

    def sink(data: bytes, now: float) -> None:
        body.extend(data)
        if len(body) > MAX_MODELS_BYTES:
            proto.abort("model list too large")

    proto = StreamingResponse(target.request("/v1/models", b"", method="GET", accept="application/json"),
                              sink, done)
    try:
        async with asyncio.timeout(timeout):
            await loop.create_connection(lambda: proto, target.host, target.port, ssl=target.ssl_context)
            status = await done
    except (OSError, ResponseError, TimeoutError):
        return []
    finally:
        if not done.done():
            done.cancel()
        if proto.transport is not None:
            proto.transport.abort()
    if status != 200:
        return []
    try:
        data = json.loads(bytes(body)).get("data") or []
    except (ValueError, AttributeError):
        return []
    if not isinstance(data, list):
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


def on_host(url: str, host: str) -> str:
    """The same URL, port and path kept, on `host` (a Slurm job's head node instead of loopback)."""
    parts = urlsplit(url)
    where = f"[{host}]" if ":" in host else host
    netloc = f"{where}:{parts.port}" if parts.port else where
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def running_server_url(profile: str) -> str | None:
    """The URL of the newest server gpudeck launched for this profile that is still live."""
    from console.store import launches

    for record in launches.load_all(profile):
        if record.live and record.port:
            return f"http://127.0.0.1:{record.port}"
    return None
