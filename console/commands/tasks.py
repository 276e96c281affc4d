"""`gpudeck tasks list|add|edit|done|rm|export|suggestions|accept|dismiss|threshold`."""
from __future__ import annotations

import argparse

from profiles.task_model import PRIORITIES, STATUS_MARKS, STATUSES

from .kit import CLIError, emit_json
from ..safe_text import clean_line


def register(sub) -> None:
    p = sub.add_parser("tasks", help="the task board of a profile")
    _profile_option(p)
    ps = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(func=_list, all=False, json=False)  # plain `gpudeck tasks` lists the board

    ls = _action(ps, "list", "the board, grouped: in progress, pending, done", _list)
    ls.add_argument("--all", action="store_true", help="also completed and cancelled tasks")
    add = _action(ps, "add", "add a task", _add, "text")
    add.add_argument("--priority", choices=PRIORITIES, default="medium")
    add.add_argument("--status", choices=STATUSES, default="pending")
    add.add_argument("--notes")
    edit = _action(ps, "edit", "change a task's text, priority, status or notes", _edit, "id")
    edit.add_argument("--text")
    edit.add_argument("--priority", choices=PRIORITIES)
    edit.add_argument("--status", choices=STATUSES)
    edit.add_argument("--notes")
    _action(ps, "done", "mark a task completed", _done, "id")
    _action(ps, "rm", "delete a task", _rm, "id")
    _action(ps, "export", "the board as Markdown (or JSON with --json)", _export)
    sugg = _action(ps, "suggestions", "suggested tasks waiting for accept or dismiss", _suggestions)
    sugg.add_argument("--scan", action="store_true", help="first look through crashes/ and runs/ for new events")
    _action(ps, "accept", "turn a suggestion into a task", _accept, "key")
    _action(ps, "dismiss", "turn a suggestion down for good", _dismiss, "key")
    threshold = _action(ps, "threshold", "efficiency %% below which a measurement suggests a task ('off' to stop)",
                        _threshold)
    threshold.add_argument("pct", nargs="?")


def _action(ps, name: str, help_text: str, func, *positionals: str) -> argparse.ArgumentParser:
    """One ACTION: its positional arguments, --profile and --json, and its handler."""
    parser = ps.add_parser(name, help=help_text)
    for positional in positionals:
        parser.add_argument(positional)
    _profile_option(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")
    parser.set_defaults(func=func)
    return parser


def _profile_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", "-p", dest="tasks_profile", metavar="P", default=argparse.SUPPRESS,
                        help="profile whose board to use (default: the last used)")


def _board(args: argparse.Namespace):
    from ..store.task_board import TaskBoard

    from .kit import load_profile

    name = getattr(args, "tasks_profile", None) or getattr(args, "profile", None)
    profile = load_profile(name)
    board = TaskBoard.for_profile(profile.name)
    if board.error is not None:
        raise CLIError(f"{board.error} (the file is kept; the board is read-only until it is fixed)")
    return board


def _task_id(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise CLIError(f"bad task id {text!r}: expected a number (see `gpudeck tasks list`)", 2) from None
    if value < 1:
        raise CLIError(f"bad task id {text!r}", 2)
    return value


def _edit_or_fail(action):
    from profiles.tasks import BoardReadOnly, refusal

    try:
        return action()
    except (KeyError, ValueError, BoardReadOnly) as exc:
        raise CLIError(refusal(exc)) from None


def _line(task) -> str:
    links = [f"{name}: {clean_line(getattr(task, name))}" for name in ("crash", "run", "config") if getattr(task, name)]
    tail = f"  [{'; '.join(links)}]" if links else ""
    clash = f"  (kept beside {task.conflict_of} after a clash)" if task.conflict_of else ""
    return f"{task.id:>4} {STATUS_MARKS[task.status]} {task.priority:<6}  {clean_line(task.text)}{tail}{clash}"


def _report_one(args: argparse.Namespace, board, task, verb: str) -> int:
    if args.json:
        emit_json({"task": task.to_json(), "conflicts": board.conflicts, "summary": board.summary()})
    else:
        print(f"{verb} {_line(task).strip()}")
        _print_conflicts(board)
    return 0


def _print_conflicts(board) -> None:
    import sys

    for note in board.conflicts:
        sys.stderr.write(f"gpudeck: note: {clean_line(note)}\n")


def _list(args: argparse.Namespace) -> int:
    board = _board(args)
    if args.json:
        emit_json(board.to_json())
        return 0
    shown = [t for t in board.tasks if args.all or t.is_open]
    if not board.tasks:
        print("no tasks yet: `gpudeck tasks add TEXT`")
    for task in shown:
        print(_line(task))
    hidden = len(board.tasks) - len(shown)
    if hidden:
        print(f"     ({hidden} done or cancelled hidden; --all shows them)")
    for s in board.suggestions:
        print(f"   ✚ suggested  {clean_line(s.text)}   (gpudeck tasks accept|dismiss {clean_line(s.key)})")
    return 0


def _add(args: argparse.Namespace) -> int:
    board = _board(args)
    task = _edit_or_fail(lambda: board.add(args.text, priority=args.priority, status=args.status,
                                           notes=args.notes))
    return _report_one(args, board, task, "added")


def _edit(args: argparse.Namespace) -> int:
    tid = _task_id(args.id)
    changes = {k: getattr(args, k) for k in ("text", "priority", "status", "notes")
               if getattr(args, k) is not None}
    if not changes:
        raise CLIError("nothing to change: give --text, --priority, --status or --notes", 2)
    board = _board(args)
    task = _edit_or_fail(lambda: board.edit(tid, **changes))
    return _report_one(args, board, task, "edited")


def _done(args: argparse.Namespace) -> int:
    tid = _task_id(args.id)
    board = _board(args)
    task = _edit_or_fail(lambda: board.edit(tid, status="completed"))
    return _report_one(args, board, task, "done")


def _rm(args: argparse.Namespace) -> int:
    tid = _task_id(args.id)
    board = _board(args)
    task = _edit_or_fail(lambda: board.remove(tid))
    return _report_one(args, board, task, "removed")


def _export(args: argparse.Namespace) -> int:
    board = _board(args)
    if args.json:
        emit_json(board.to_json())
        return 0
    from ..report.tasks import board_markdown

    print(board_markdown(board.tasks, board.suggestions), end="")
    return 0


def _suggestions(args: argparse.Namespace) -> int:
    board = _board(args)
    if args.scan:
        from ..store.suggest import offer_new_on

        offer_new_on(board, board.path.parent.name)
    if args.json:
        emit_json({"suggestions": [s.to_json() for s in board.suggestions],
                   "dismissed": sorted(board.dismissed),
                   "efficiency_threshold_pct": board.threshold_pct})
        return 0
    if not board.suggestions:
        print("no suggestions waiting")
    for s in board.suggestions:
        print(f"{clean_line(s.key)}\n    {s.priority:<6}  {clean_line(s.text)}")
    return 0


def _accept(args: argparse.Namespace) -> int:
    board = _board(args)
    task = _edit_or_fail(lambda: board.accept(args.key))
    return _report_one(args, board, task, "accepted")


def _dismiss(args: argparse.Namespace) -> int:
    board = _board(args)
    _edit_or_fail(lambda: board.dismiss(args.key, waiting_only=True))
    if args.json:
        emit_json({"dismissed": args.key})
    else:
        print(f"dismissed {clean_line(args.key)}")
    return 0


def _threshold(args: argparse.Namespace) -> int:
    board = _board(args)
    if args.pct is not None:
        from profiles.tasks import parse_threshold

        try:
            pct = parse_threshold(args.pct)
        except ValueError as exc:
            raise CLIError(str(exc), 2) from None
        _edit_or_fail(lambda: board.set_threshold(pct))
    value = board.threshold_pct
    if args.json:
        emit_json({"efficiency_threshold_pct": value})
    else:
        print("efficiency suggestions off" if value is None else f"efficiency threshold {value:g}%")
    return 0
