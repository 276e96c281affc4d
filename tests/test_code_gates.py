"""The code gates the project keeps: ruff's lint and the type checker, configured in pyproject.toml.

They run as the tools themselves, on the whole tree, so a gate that fails here fails the same way
for a maintainer running `ruff check` or `mypy` by hand."""
from __future__ import annotations

import subprocess
import sys

from tests.realparts import ROOT


def _tool(*argv: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *argv], cwd=ROOT, capture_output=True, text=True, timeout=600)


def test_ruff_finds_nothing():
    out = _tool("ruff", "check", "console", "screens", "widgets", "profiles", "tests")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]


def test_the_type_checker_passes_with_the_strict_packages_strict():
    out = _tool("mypy")
    assert out.returncode == 0, out.stdout[-4000:] + out.stderr[-2000:]
    for package in ("console/store", "profiles", "console/servers", "console/slurm", "console/campaign"):
        assert package in _configured_files(), package


def _configured_files() -> list[str]:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["mypy"]["files"]
