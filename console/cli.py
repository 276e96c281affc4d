"""The `gpudeck` command line: one parser, commands registered from console/commands."""
from __future__ import annotations

import argparse
import importlib
import sys

from .commands.kit import CLIError
from .commands import COMMAND_MODULES


class _Parser(argparse.ArgumentParser):
    """argparse, but bad arguments exit 2 with one line on stderr."""

    def error(self, message: str) -> None:  # type: ignore[override]
        sys.stderr.write(f"gpudeck: {message} (see `{self.prog} --help`)\n")
        raise SystemExit(2)


def build_parser(argv: list[str] | None = None) -> argparse.ArgumentParser:
    """The parser; given the arguments, with only the command they name registered (importing
    every command module costs each call about 20 ms), else with every command."""
    parser = _Parser(
        prog="gpudeck",
        description="Terminal operations console for LLM inference servers on multi-GPU hosts.",
    )
    parser.add_argument("--profile", "-p", help="profile to open (default: the last used, else 'local')")
    parser.add_argument("--readonly", action="store_true", help="TUI without any destructive key")
    parser.add_argument("--version", action=_VersionAction)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)
    named = command_named(argv) if argv is not None else None
    for name in [named] if named else COMMAND_MODULES:
        importlib.import_module(f"console.commands.{name}").register(sub)
    _globals_after_commands(sub)
    return parser


def command_named(argv: list[str]) -> str | None:
    """The command `argv` runs, read as argparse reads the global options before it (`--profile`
    and its abbreviations take a value; the others do not); None when it names no known command
    (`--help`, a typo: those need every command registered)."""
    taking_value = False
    for token in argv:
        if taking_value:
            taking_value = False
            continue
        if token == "--":
            return None
        if token.startswith("-"):
            if token in ("-h", "--help") or (token.startswith("--h") and "--help".startswith(token)):
                return None
            taking_value = token == "-p" or (len(token) > 2 and "--profile".startswith(token))
            continue
        return token if token in COMMAND_MODULES else None
    return None


class _VersionAction(argparse.Action):
    """`--version`, looked up only when asked: reading the package metadata costs every other
    command tens of milliseconds of imports."""

    def __init__(self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None):
        super().__init__(option_strings, dest=dest, default=default, nargs=0,
                         help=help or "show program's version number and exit")

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        sys.stdout.write(f"gpudeck {_version()}\n")
        parser.exit()


def _version() -> str:
    """The package's version and, from a git checkout, the commit it runs from ('+changes' when
    the tree differs from it), so a report of a bug names the code that showed it. Run from a
    checkout (`python -m console`, nothing installed), the version is the checkout's pyproject's."""
    from importlib.metadata import PackageNotFoundError, version

    number = _source_version()
    if number is None:
        try:
            number = version("gpudeck")
        except PackageNotFoundError:
            number = "(version unknown: not installed, no pyproject.toml beside the source)"
    return f"{number} ({_commit()})"


def _source_version() -> str | None:
    """The version in the pyproject.toml of the checkout this code runs from, if it is gpudeck's."""
    import tomllib
    from pathlib import Path

    pyproject = Path(__file__).resolve().parent.parent / "pyproject.toml"
    try:
        project = tomllib.loads(pyproject.read_text(encoding="utf-8")).get("project") or {}
    except (OSError, UnicodeDecodeError, tomllib.TOMLDecodeError):
        return None
    number = project.get("version") if project.get("name") == "gpudeck" else None
    return number if isinstance(number, str) and number else None


def _commit() -> str:
    import subprocess
    from pathlib import Path

    here = str(Path(__file__).resolve().parent)
    try:
        head = subprocess.run(["git", "-C", here, "rev-parse", "--short=12", "HEAD"], capture_output=True,
                              text=True, timeout=5)
        if head.returncode != 0 or not head.stdout.strip():
            return "commit unknown: not a git checkout"
        changed = subprocess.run(["git", "-C", here, "status", "--porcelain", "--untracked-files=no"],
                                 capture_output=True, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired):
        return "commit unknown: git did not answer"
    dirty = "+changes" if changed.returncode == 0 and changed.stdout.strip() else ""
    return f"commit {head.stdout.strip()}{dirty}"


# Commands that hand the terminal to the Textual app: it draws through its own driver.
_OWN_TERMINAL = {None, "tui", "demo"}


def _globals_after_commands(sub) -> None:
    """`gpudeck demo --readonly` works like `gpudeck --readonly demo`: each command accepts the
    global options too, unless it has its own option of that name. SUPPRESS keeps an absent
    option from overwriting the value given before the command."""
    for name, command in sub.choices.items():
        taken = command._option_string_actions
        if "--readonly" not in taken:
            command.add_argument("--readonly", action="store_true", default=argparse.SUPPRESS,
                                 help="TUI without any destructive key")
        if name != "demo" and "--profile" not in taken and "-p" not in taken:  # the demo has its own
            command.add_argument("--profile", "-p", default=argparse.SUPPRESS,
                                 help="profile to open (default: the last used, else 'local')")


def main(argv: list[str] | None = None) -> int:
    """Run one command with every human-readable line passing the one text boundary."""
    from .safe_text import CleanWriter

    saved = sys.stdout, sys.stderr
    # JSON output is plain ASCII (control characters escaped) and passes unchanged
    sys.stdout, sys.stderr = CleanWriter(sys.stdout), CleanWriter(sys.stderr)
    try:
        return _main(argv, saved)
    finally:
        sys.stdout, sys.stderr = saved


def _main(argv: list[str] | None, raw_streams: tuple) -> int:
    argv = sys.argv[1:] if argv is None else argv
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    handler = getattr(args, "func", None)
    if args.command in _OWN_TERMINAL:
        sys.stdout, sys.stderr = raw_streams
    if handler is None:
        from .commands.tui import open_tui

        handler = open_tui
    try:
        from .servers.settle_gate import profile_to_settle

        if profile_to_settle(args) is not None:  # only then is the runtime worth importing
            from .runtime.settle import settle_before_command

            settle_before_command(args)  # crash records never wait for a console to be open
        code = handler(args)
    except CLIError as exc:
        sys.stderr.write(f"gpudeck: {exc}\n")
        return exc.code
    except KeyboardInterrupt:
        sys.stderr.write("gpudeck: interrupted\n")
        return 130
    except BrokenPipeError:
        # the reader went away (`gpudeck ... --json | head`): not an error of ours
        import os

        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # an unwritable home, a read-only data dir, a full disk: one line naming the file and the cause
        why = exc.strerror or str(exc)
        sys.stderr.write(f"gpudeck: {exc.filename}: {why}\n" if exc.filename else f"gpudeck: {why}\n")
        return 1
    except Exception as exc:  # noqa: BLE001 - a bug: still one line for the operator, the trace on request
        from os import environ

        if environ.get("GPUDECK_DEBUG"):
            raise
        from .safe_text import clean_line

        sys.stderr.write(f"gpudeck: internal error: {type(exc).__name__}: {clean_line(exc)} "
                         "(a bug; GPUDECK_DEBUG=1 shows the traceback)\n")
        return 1
    return int(code or 0)


if __name__ == "__main__":
    raise SystemExit(main())
