"""Small shared pieces of the CLI: errors, JSON output, async entry."""
from __future__ import annotations

import json
import sys
from typing import Any, Awaitable, Callable


class CLIError(Exception):
    """Bad input or a failed action: printed as one line on stderr."""

    def __init__(self, message: str, code: int = 1):
        self.code = code
        super().__init__(message)


def emit_json(doc: Any) -> None:
    """One JSON document on stdout, nothing else."""
    json.dump(doc, sys.stdout, indent=2, sort_keys=False, default=_default)
    sys.stdout.write("\n")
    sys.stdout.flush()


def _default(value: Any) -> Any:
    if hasattr(value, "to_json"):
        return value.to_json()
    if hasattr(value, "__fspath__"):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


def run_async(coro: Awaitable[int]) -> int:
    import asyncio

    return asyncio.run(coro)  # type: ignore[arg-type]


def load_profile(name: str | None):
    """The named profile, or the last used one; CLIError on a bad file."""
    from profiles import store
    from profiles.profile import ProfileError

    try:
        return store.load(name or store.last_used())
    except (ProfileError, ValueError) as exc:
        raise CLIError(str(exc)) from None


async def with_session(args, body: Callable[[Any], Awaitable[int]], profile_attr: str = "server_profile") -> int:
    """Run `body(session)` on the profile the arguments name, one line for a host error, the
    connection closed after."""
    from ..hosts import HostError
    from ..session import HostSession

    profile = load_profile(getattr(args, profile_attr, None) or getattr(args, "profile", None))
    # a command runs once and leaves: no latency ping, a round trip nobody would read
    session = HostSession.open(profile, readonly=bool(getattr(args, "readonly", False)), measure_latency=False)
    try:
        return await body(session)
    except HostError as exc:
        raise CLIError(str(exc)) from None
    finally:
        await session.host.close()


def pick_launch(session, target: str | None, live_only: bool = True):
    """The launch a CLI target names (console.servers.owners.pick), or CLIError."""
    from ..servers.owners import pick

    try:
        return pick(session.name, target, live_only)
    except LookupError as exc:
        raise CLIError(str(exc.args[0])) from None
