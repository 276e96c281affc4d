"""A launch permit: a file that must exist for a launch to start its server.

When the console's environment names one (`GPUDECK_LAUNCH_PERMIT`), the launch wrapper's server
half, once it runs in its own process group and has written that group's id, starts the script
only while the file exists. The demo grants one when it builds its world and revokes it first
thing when it ends, so a launch still in flight then (a wrapper not started yet, or one between
its fork and its group) never starts a server in a world that is being removed. Whatever passed
the check before the revocation already runs, carries its launch mark and is found by the
demo's sweep (`console.demo.world_processes`). Unset, nothing is checked (every real launch).
"""
from __future__ import annotations

import os
from pathlib import Path

ENV = "GPUDECK_LAUNCH_PERMIT"   # read by lifecycle.WRAPPER under this name

# the wrapper's check, in its server half: refuse (exit 95) once the permit named is gone
SHELL_CHECK = (f'if [ -n "${{{ENV}:-}}" ] && [ ! -e "${ENV}" ]; then '
               f'echo "gpudeck: not started: the launch permit ${ENV} is revoked" >&2; exit 95; fi')


def grant(path: Path) -> None:
    """Create the permit and name it in this process's environment (its launches inherit it)."""
    path.parent.mkdir(parents=True, exist_ok=True)
    path.touch()
    os.environ[ENV] = str(path)


def revoke(path: Path) -> None:
    """Remove the permit: from now on no launch under it starts a server. Plain system calls
    only, so a signal handler may call it."""
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


def forget(path: Path) -> None:
    """Stop naming the permit in this process's environment, once its world is gone, so a later
    launch from this process (another world, a real server) is not refused by a dead permit."""
    if os.environ.get(ENV) == str(path):
        del os.environ[ENV]
