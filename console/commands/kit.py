"""Small shared pieces of the CLI: errors, JSON output, async entry."""
from __future__ import annotations

import json
import sys
from typing import Any, Awaitable


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
