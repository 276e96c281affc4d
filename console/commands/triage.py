"""`gpudeck triage LOGFILE [--json] [--exit-status N] [--stopped-by-operator]`: say why a server log
ended the way it did, and on which kinds of evidence."""
from __future__ import annotations

import argparse

KINDS = ("process", "liveness", "log lifecycle", "final episode")


def register(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("triage", help="classify a server log: class, line number, excerpt")
    parser.add_argument("logfile", help="a server log file")
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.add_argument("--exit-status", type=_status, metavar="N", default=None,
                        help="how the process ended: its exit status (128+N for signal N, or -N)")
    parser.add_argument("--stopped-by-operator", action="store_true",
                        help="the stop was asked for (gpudeck, the operator): never a crash")
    parser.add_argument("--kernel", action="store_true",
                        help="read this host's kernel log (journalctl -k, else dmesg) around the log's last "
                             "write for NVIDIA Xid / amdgpu faults, which outrank the log's phrase")
    parser.add_argument("--kernel-log", metavar="FILE", default=None,
                        help="a saved kernel log (journalctl -k or dmesg output) to read for GPU faults")
    parser.set_defaults(func=handle)


def _status(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not an exit status: {text[:40]!r}") from None
    if not -255 <= value <= 255:
        raise argparse.ArgumentTypeError(f"exit status out of range (-255..255): {value}")
    return value


def _tail(path: str, count: int = 10) -> list[str]:
    """The log's last lines (from its last 16 KiB), for a verdict that has no line of its own."""
    from console.servers.triage import clean_line

    from console.store.files import FileRefused, open_regular

    try:
        with open_regular(path) as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - 16384))
            text = handle.read().decode("utf-8", "replace")
    except (OSError, FileRefused):
        return []
    return [clean_line(line)[:400] for line in text.splitlines()[-count:]]


def _engine_died(path: str) -> bool:
    """Does the log's last part show the engine dying before any stop was asked for?"""
    from console.servers.engine_death import TAIL_BYTES, death_line

    from console.store.files import FileRefused, open_regular

    try:
        with open_regular(path) as handle:
            handle.seek(0, 2)
            handle.seek(max(0, handle.tell() - TAIL_BYTES))
            return death_line(handle.read().decode("utf-8", "replace")) is not None
    except (OSError, FileRefused):
        return False


def handle(args: argparse.Namespace) -> int:
    from console.commands.kit import CLIError, emit_json
    from console.servers.triage import classify_file
    from console.servers.triage.process import ProcessEvidence, judge
    from console.store.files import FileRefused

    try:
        result = classify_file(args.logfile)
    except FileNotFoundError:
        raise CLIError(f"no such log file: {args.logfile}") from None
    except FileRefused as exc:   # a FIFO, a device or a directory: refused, never waited on or read for ever
        raise CLIError(str(exc)) from None
    except OSError as exc:
        raise CLIError(f"cannot read {args.logfile}: {exc.strerror or exc}") from None
    result = _with_driver(result, args)
    status = getattr(args, "exit_status", None)
    stopped = bool(getattr(args, "stopped_by_operator", False))
    result = judge(result, ProcessEvidence(exit_status=status, stopped_by_operator=stopped, ended=status is not None,
                                           engine_died=status == 0 and _engine_died(args.logfile)),
                   _tail(args.logfile))
    if args.json:
        emit_json(result.to_json() | {"sources_had": {kind: kind in result.sources for kind in KINDS}})
        return 0
    from console.safe_text import clean_line

    where = f"line {result.line}" if result.line is not None else "no decisive line"
    # a log alone proves where the server was last seen, not that it still runs
    state = result.last_seen() or f"state {result.state}"
    print(f"{clean_line(result.cls)} · {where} · server {clean_line(result.server)} · "
          f"ready {'seen' if result.ready_seen else 'not seen'} · {clean_line(state)}")
    print(clean_line(result.summary))
    had = [kind for kind in KINDS if kind in result.sources]
    missing = [kind for kind in KINDS if kind not in result.sources]
    print(f"evidence: {', '.join(had) or 'none'}" + (f" · not had: {', '.join(missing)}" if missing else ""))
    print(f"confidence {result.overall_confidence:.2f} · rests on: {', '.join(result.evidence_kinds) or 'nothing'}"
          + (f" · decided by {clean_line(result.decided_by)}" if result.decided_by else ""))
    for note in result.evidence:
        if note.startswith("kernel log"):
            print(clean_line(note))
    if result.suspicious:
        print("look here:")
        for entry in result.suspicious:
            print(f"  line {entry['line']}: {clean_line(entry['why'])}")
            print(f"    {clean_line(entry['text'])}")
    for text in result.excerpt:  # log lines: hostile text, one screen line each
        print(f"  {clean_line(text)}")
    return 0


def _with_driver(result, args: argparse.Namespace):
    """The verdict outranked by the kernel's word on the GPU, when asked for: a saved kernel log, or this
    host's own in the window around the log's last write."""
    from console.servers.triage import driver

    if getattr(args, "kernel_log", None):
        log, events = driver.read_file(args.kernel_log)
        return driver.apply(result, events, log)
    if not getattr(args, "kernel", False):
        return result
    import asyncio
    import os
    from datetime import datetime, timezone

    from console.hosts.local import LocalHost

    moment = datetime.fromtimestamp(os.stat(args.logfile).st_mtime, timezone.utc)
    since, until = driver.window_around(moment)
    log = asyncio.run(driver.read(LocalHost(), since, until))
    return driver.apply(result, driver.in_window(driver.parse(log.text), since, until), log)
