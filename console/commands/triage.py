"""`gpudeck triage LOGFILE [--json]`: say why a server log ended the way it did."""
from __future__ import annotations

import argparse


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("triage", help="classify a server log: class, line number, excerpt")
    parser.add_argument("logfile", help="a server log file")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.set_defaults(func=handle)


def handle(args: argparse.Namespace) -> int:
    from console.commands.kit import CLIError, emit_json
    from console.servers.triage import classify_file

    try:
        result = classify_file(args.logfile)
    except FileNotFoundError:
        raise CLIError(f"no such log file: {args.logfile}") from None
    except IsADirectoryError:
        raise CLIError(f"not a file: {args.logfile}") from None
    except OSError as exc:
        raise CLIError(f"cannot read {args.logfile}: {exc.strerror or exc}") from None
    if args.json:
        emit_json(result.to_json())
        return 0
    from console.safe_text import clean_line

    where = f"line {result.line}" if result.line is not None else "no decisive line"
    print(f"{clean_line(result.cls)} · {where} · server {clean_line(result.server)} · "
          f"ready {'seen' if result.ready_seen else 'not seen'}")
    print(clean_line(result.summary))
    for text in result.excerpt:  # log lines: hostile text, one screen line each
        print(f"  {clean_line(text)}")
    return 0
