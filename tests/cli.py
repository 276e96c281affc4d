"""The one way tests run the `gpudeck` command: in a process of its own, as an operator would,
or in this process where a test needs a bug to escape as its own traceback.

Both take the test's environment (the autouse fixture's GPUDECK_HOME included), run from the
repository root, and put this checkout first on the import path, so the code under test is
the code run.
"""
from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
TIMEOUT_S = 120.0  # a loaded 2-core machine; a command that needs longer says so at its call


def gpudeck(*args: str, timeout: float = TIMEOUT_S, home: Path | str | None = None,
            env: dict[str, str] | None = None, stdin: bytes | str | None = None, text: bool = True,
            wrap: list[str] | None = None, cwd: Path | str = ROOT) -> subprocess.CompletedProcess:
    """`gpudeck ARGS` in its own process; the completed process (exit status, stdout, stderr).

    `home` sets GPUDECK_HOME, `env` adds or replaces variables, `stdin` is fed (else the command
    reads an empty input, never the test's terminal), `text=False` keeps the output as bytes and
    `wrap` goes before the interpreter (a `timeout`, a `prlimit`)."""
    environment = {**os.environ, **(env or {})}
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environment.get("PYTHONPATH", "")) if p)
    if home is not None:
        environment["GPUDECK_HOME"] = str(home)
    if isinstance(stdin, str) and not text:
        stdin = stdin.encode()
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    return subprocess.run([*(wrap or []), sys.executable, "-m", "console", *args], capture_output=True,
                          text=text, env=environment, cwd=cwd, timeout=timeout, **feed)


def json_out(proc: subprocess.CompletedProcess) -> Any:
    """The one JSON document a `--json` command printed; the failure says what it printed instead."""
    try:
        return json.loads(proc.stdout)
    except ValueError:
        raise AssertionError(f"exit {proc.returncode}, not JSON on stdout: {proc.stdout[:500]!r}; "
                             f"stderr: {proc.stderr[-500:]!r}") from None


def gpudeck_here(*args: str) -> tuple[int, str, str]:
    """`gpudeck ARGS` in this process with GPUDECK_DEBUG set, so a bug escapes as its own traceback
    (counted by the caller) rather than as the one line an operator gets; (exit status, stdout,
    stderr)."""
    from console import cli

    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout, sys.stderr
    debug = os.environ.get("GPUDECK_DEBUG")
    sys.stdout, sys.stderr = out, err
    os.environ["GPUDECK_DEBUG"] = "1"
    try:
        code = cli.main(list(args))
    except SystemExit as exc:  # argparse's own exit for bad usage
        code = exc.code if isinstance(exc.code, int) else 2
    finally:
        sys.stdout, sys.stderr = saved
        if debug is None:
            os.environ.pop("GPUDECK_DEBUG", None)
        else:
            os.environ["GPUDECK_DEBUG"] = debug
    return code or 0, out.getvalue(), err.getvalue()
