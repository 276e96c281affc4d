"""Dependencies cannot drift under the suite: bounded majors, and CI installs what was tested (issue 23).

`textual>=0.80` once resolved to a new major the code had never run on. The
three libraries whose APIs the console leans on hardest carry an upper bound
on their major version, and tests/run.sh installs with tests/constraints.txt,
whose pins must satisfy pyproject.toml and be what this environment runs.
"""
from __future__ import annotations

import tomllib
from importlib.metadata import version
from pathlib import Path

from packaging.requirements import Requirement
from packaging.version import Version

ROOT = Path(__file__).resolve().parent.parent
BOUNDED = ("textual", "asyncssh", "httpx")


def _requirements() -> dict[str, Requirement]:
    doc = tomllib.loads((ROOT / "pyproject.toml").read_text())
    reqs = [Requirement(r) for r in doc["project"]["dependencies"]]
    return {r.name.lower(): r for r in reqs}


def _pins() -> dict[str, str]:
    pins = {}
    for line in (ROOT / "tests" / "constraints.txt").read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if line:
            name, _, pinned = line.partition("==")
            assert pinned, f"constraints.txt: {line!r} is not a pin (name==version)"
            pins[name.strip().lower().replace("_", "-")] = pinned.strip()
    return pins


def test_the_console_libraries_have_an_upper_bound_on_their_major_version():
    reqs = _requirements()
    for name in BOUNDED:
        spec = reqs[name].specifier
        uppers = [s for s in spec if s.operator == "<"]
        assert uppers, f"{name} has no upper bound in pyproject.toml"
        upper = Version(uppers[0].version)
        assert upper.release[1:] in ((), (0,), (0, 0)), f"{name}: the bound {upper} is not a major version"
        assert spec.contains(version(name)), f"{name} {version(name)} installed is outside {spec}"


def test_constraints_pin_what_runs_here_and_satisfy_pyproject():
    pins, reqs = _pins(), _requirements()
    for name in BOUNDED + ("rich", "aiohttp", "prometheus-client", "pytest", "hypothesis"):
        assert name in pins, f"{name} is not pinned in tests/constraints.txt"
        assert version(name) == pins[name], f"{name}: {version(name)} runs here, constraints pin {pins[name]}"
    for name, req in reqs.items():
        if name in pins:
            assert req.specifier.contains(pins[name]), f"{name}=={pins[name]} is outside {req.specifier}"


def test_run_sh_installs_with_the_constraints():
    script = (ROOT / "tests" / "run.sh").read_text()
    assert "-c tests/constraints.txt" in script
