"""A home gpudeck cannot write gives one line and exit 1, never a traceback; reading still works.

The read-only and full cases use a real tmpfs in a private mount namespace
(`unshare --user --map-root-user --mount`, from util-linux), so the kernel itself
answers EROFS and ENOSPC, as it would on a production host.
"""
from __future__ import annotations

import errno
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.cli import gpudeck

ROOT = Path(__file__).resolve().parent.parent

SCRIPT = r"""
set -u
mount -t tmpfs -o size=512k tmpfs "$H" || exit 90
gd() { "$PY" -m console "$@"; echo "rc=$?"; }
gd tasks add "first task" >/dev/null 2>&1
echo "== ro"
mount -o remount,ro "$H" || exit 91
gd profiles list
gd tasks list
gd tasks add "second task"
gd report --offline
echo "== data-ro"
mount -o remount,rw "$H" || exit 92
mount --bind "$H/data" "$H/data" && mount -o remount,bind,ro "$H/data" || exit 93
gd tasks list
gd tasks add "second task"
umount "$H/data" || exit 94
echo "== full"
dd if=/dev/zero of="$H/fill" bs=4k 2>/dev/null
gd tasks add "third task"
gd report --offline
"""


def _in_namespace(tmp_path) -> dict[str, list[str]]:
    if shutil.which("unshare") is None:
        pytest.fail("needs `unshare` (Debian package util-linux)", pytrace=False)
    home = tmp_path / "home"
    home.mkdir()
    env = dict(os.environ, PYTHONPATH=str(ROOT), H=str(home), PY=sys.executable, GPUDECK_HOME=str(home))
    proc = subprocess.run(["unshare", "--user", "--map-root-user", "--mount", "sh", "-c", SCRIPT],
                          capture_output=True, text=True, env=env, cwd=ROOT, timeout=300)
    assert proc.returncode == 0, f"namespace setup failed ({proc.returncode}): {proc.stderr}"
    assert "Traceback" not in proc.stdout + proc.stderr, proc.stderr
    # stdout is split by the section markers; stderr (the error lines) is checked as a whole
    parts: dict[str, list[str]] = {}
    current = "setup"
    for line in proc.stdout.splitlines():
        if line.startswith("== "):
            current = line[3:]
            continue
        parts.setdefault(current, []).append(line)
    parts["stderr"] = proc.stderr.splitlines()
    return parts


def test_read_only_and_full_home_give_one_line_errors(tmp_path):
    parts = _in_namespace(tmp_path)
    ro = parts["ro"]
    # reading works on a read-only home
    assert ro[0].startswith("* local") and ro[1] == "rc=0", ro
    assert "first task" in ro[2] and ro[3] == "rc=0", ro
    # writing fails with exit 1
    assert ro[4:] == ["rc=1", "rc=1"], ro
    # only the data dir read-only: the board still reads, a write fails
    data_ro = parts["data-ro"]
    assert "first task" in data_ro[0] and data_ro[1:] == ["rc=0", "rc=1"], data_ro
    assert parts["full"] == ["rc=1", "rc=1"], parts["full"]
    errors = parts["stderr"]
    # one line each, naming the cause
    assert len(errors) == 5, errors
    assert all(line.startswith("gpudeck: ") for line in errors), errors
    assert sum("Read-only file system" in line for line in errors) == 3, errors
    assert sum("No space left on device" in line for line in errors) == 2, errors


def test_a_home_that_is_a_file_gives_one_line(tmp_path):
    home = tmp_path / "not-a-dir"
    home.write_text("x")
    for argv in (["tasks", "add", "x"], ["profiles", "add", "box", "--ssh", "u@h"], ["report", "--offline"]):
        proc = gpudeck(*argv, home=home)
        assert proc.returncode == 1, (argv, proc.stderr)
        assert "Traceback" not in proc.stderr
        lines = proc.stderr.splitlines()
        assert len(lines) == 1 and lines[0].startswith("gpudeck: "), (argv, proc.stderr)


def test_bad_usage_still_exits_2(tmp_path):
    proc = gpudeck("tasks", "frobnicate", home=tmp_path)
    assert proc.returncode == 2 and len(proc.stderr.splitlines()) == 1


def test_an_os_error_anywhere_in_a_command_is_one_line(monkeypatch, capsys):
    """ENOSPC raised from deep inside a write (as a full disk does mid-fsync) ends as one line."""
    from console import cli
    from profiles import atomic

    def full(*args, **kwargs):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(atomic.os, "fsync", full)
    assert cli.main(["tasks", "add", "a task"]) == 1
    err = capsys.readouterr().err
    assert err == f"gpudeck: {os.strerror(errno.ENOSPC)}\n"


def test_a_bug_in_a_command_is_one_line_unless_debugging(monkeypatch, capsys):
    from console import cli
    from console.commands import triage

    def broken(args):
        raise RuntimeError("boom\x1b[2J")

    monkeypatch.setattr(triage, "handle", broken)
    monkeypatch.delenv("GPUDECK_DEBUG", raising=False)
    assert cli.main(["triage", "x.log"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("gpudeck: internal error: RuntimeError: boom␛[2J") and err.count("\n") == 1
    monkeypatch.setenv("GPUDECK_DEBUG", "1")
    try:
        cli.main(["triage", "x.log"])
    except RuntimeError:
        pass
    else:
        raise AssertionError("GPUDECK_DEBUG=1 must let the exception out")
