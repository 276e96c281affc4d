"""`gpudeck report [--profile P] [--out FILE] [--offline] [--json]`: write the findings document."""
from __future__ import annotations

import argparse

from .kit import CLIError, emit_json, load_profile


def register(sub) -> None:
    p = sub.add_parser("report", help="write (or refresh) the profile's Markdown findings document")
    p.add_argument("--profile", "-p", dest="report_profile", metavar="P", default=argparse.SUPPRESS,
                   help="profile to report on (default: the last used)")
    p.add_argument("--out", metavar="FILE", help="where to write it (default: findings.md in the profile's data dir)")
    p.add_argument("--offline", action="store_true",
                   help="only the profile's saved files: do not ask the host for GPUs or launch configs")
    p.add_argument("--json", action="store_true", help="say what was written as one JSON document")
    p.set_defaults(func=_report)


def _report(args: argparse.Namespace) -> int:
    from ..report import ReportError, write_report

    profile = load_profile(getattr(args, "report_profile", None) or getattr(args, "profile", None))
    try:
        path, data = write_report(profile, args.out, live=not args.offline)
    except ReportError as exc:
        raise CLIError(str(exc)) from None
    summary = {
        "path": str(path),
        "profile": profile.name,
        "runs": len(data.runs),
        "crashes": len(data.crashes),
        "configs": len(data.configs),
        "tasks": len(data.board.tasks) if data.board and data.board.error is None else None,
        "gpus": data.gpus_note if data.gpus is None else data.gpus.get("state"),
        "roofline": "included" if data.roofline is not None else data.roofline_note,
        "suggested": data.suggested,
    }
    if args.json:
        emit_json(summary)
    else:
        print(f"wrote {path}: {summary['runs']} run(s), {summary['crashes']} crash(es), "
              f"{summary['tasks'] if summary['tasks'] is not None else 'unreadable'} task(s)")
        for text in data.suggested:
            print(f"suggested: {text}  (see `gpudeck tasks suggestions`)")
    return 0
