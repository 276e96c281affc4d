"""The one way tests run the `gpudeck` command: in a process of its own, as an operator would,
or in this process where a test needs a bug to escape as its own traceback; `gpudeck_sound`
is the first with the checks a hostile or fuzzed input needs (no traceback, the exit expected).

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
            env: dict[str, str | None] | None = None, stdin: bytes | str | None = None, text: bool = True,
            errors: str | None = None, wrap: list[str] | None = None, cwd: Path | str = ROOT,
            setup: str | None = None) -> subprocess.CompletedProcess:
    """`gpudeck ARGS` in its own process; the completed process (exit status, stdout, stderr).

    `home` sets GPUDECK_HOME, `env` adds or replaces variables (None removes one), `stdin` is fed
    (else the command reads an empty input, never the test's terminal), `text=False` keeps the
    output as bytes, `errors` is how text output decodes ("surrogateescape" keeps odd bytes),
    `wrap` goes before the interpreter (a `timeout`, a `prlimit`) and `setup` is Python the child
    runs before the command (a module constant shortened)."""
    environment = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    environment["PYTHONPATH"] = os.pathsep.join(p for p in (str(ROOT), environment.get("PYTHONPATH", "")) if p)
    if home is not None:
        environment["GPUDECK_HOME"] = str(home)
    if isinstance(stdin, str) and not text:
        stdin = stdin.encode()
    feed = {"input": stdin} if stdin is not None else {"stdin": subprocess.DEVNULL}
    entry = ["-m", "console"] if setup is None else [
        "-c", f"{setup}\nimport sys\nfrom console.cli import main\nraise SystemExit(main(sys.argv[1:]))"]
    return subprocess.run([*(wrap or []), sys.executable, *entry, *args], capture_output=True,
                          text=text, errors=errors, env=environment, cwd=cwd, timeout=timeout, **feed)


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


def gpudeck_sound(*args: str, status: int | None = 0, **options: Any) -> subprocess.CompletedProcess:
    """`gpudeck ARGS` (as `gpudeck` runs it, `options` passed on) that must end as an operator would
    see it: no traceback and no "internal error" on stderr, and exit `status` (None: any). The
    output is text with undecodable bytes replaced, so hostile input cannot fail the decoding."""
    proc = gpudeck(*args, errors="replace", **options)
    assert "Traceback (most recent call last)" not in proc.stderr, proc.stderr
    assert "internal error" not in proc.stderr, proc.stderr
    if status is not None:
        assert proc.returncode == status, f"exit {proc.returncode}, not {status}: {proc.stderr[-2000:]}"
    return proc
