"""A CLI call registers only the command it names: the same parse as with every command, fewer imports.

Importing every command module to build the parser cost each call about 20 ms;
the command is read from the arguments the way argparse reads the global
options before it, and anything it cannot place (`--help`, a typo) gets the
whole parser.
"""
from __future__ import annotations

import subprocess
import sys

import pytest

from console.cli import build_parser, command_named
from tests.cli import gpudeck
from tests.realparts import ROOT

SAME = [
    ["gpus", "-p", "bench"],
    ["gpus", "--json", "--profile", "box"],
    ["-p", "gpus", "tui"],                       # a profile named like a command is the option's value
    ["--prof", "bench", "gpus", "--watch"],      # an abbreviated --profile takes its value too
    ["--profile=gpus", "--readonly", "demo"],
    ["-pgpus", "profiles", "list"],
    ["bench", "--concurrency", "1"],
    ["--readonly", "server", "status"],
    ["profiles", "show", "local"],
]


@pytest.mark.parametrize("argv", SAME, ids=[" ".join(a) for a in SAME])
def test_the_one_command_parser_reads_arguments_as_the_whole_one_does(argv):
    assert command_named(argv) is not None
    assert _read(build_parser(argv), argv) == _read(build_parser(), argv)


def _read(parser, argv) -> dict:
    """The parsed namespace; a handler made per parser (a lambda) compared by its code."""
    return {k: getattr(v, "__code__", v) for k, v in vars(parser.parse_args(argv)).items()}


@pytest.mark.parametrize("argv", [[], ["--help"], ["-p", "x", "--hel"], ["bogus"], ["--readonly"], ["--", "gpus"]])
def test_arguments_naming_no_command_get_every_command(argv):
    assert command_named(argv) is None


def test_only_the_named_command_module_is_imported():
    code = ("import sys; from console.cli import build_parser; build_parser(['gpus', '-p', 'x']); "
            "print(' '.join(sorted(m for m in sys.modules if m.startswith('console.commands.'))))")
    out = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["console.commands.gpus", "console.commands.kit"]


def test_a_typo_still_lists_every_command():
    out = gpudeck("gpu")
    assert out.returncode == 2 and "invalid choice: 'gpu'" in out.stderr and "'campaign'" in out.stderr
