"""Helpers for tests that drive the nvidia-smi stand-in (tests/fixtures/nvidia-smi/standin.py)."""
from __future__ import annotations

import sys
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"
STANDIN = FIXTURES / "standin.py"


def standin_command(ticks: str, apps: str | None = "apps-none.csv", *extra: str) -> list[str]:
    """The argv prefix that replaces `nvidia-smi` (a profile's [gpu] smi_command)."""
    argv = [sys.executable, str(STANDIN), "--replay", str(FIXTURES / ticks)]
    if apps:
        argv += ["--apps", str(FIXTURES / apps)]
    return argv + list(extra)
