"""Is a local process alive? A zombie (exited, not yet reaped) is not.

This machine's pid 1 may never reap orphans, so `kill(pid, 0)` alone would
call a dead driver or server alive for ever.
"""
from __future__ import annotations

import os
from typing import Any


def pid_alive(pid: Any) -> bool:
    if isinstance(pid, bool) or not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().rsplit(")", 1)[1].split()[0] != "Z"
    except (OSError, IndexError):
        return True
