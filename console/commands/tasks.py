"""`gpudeck tasks list|add|edit|done|rm|export|suggestions|accept|dismiss|threshold`."""
from __future__ import annotations

import argparse

from .kit import CLIError, emit_json
from ..safe_text import clean_line

STATUS_MARK = {"in_progress": "▶", "pending": "●", "completed": "✔", "cancelled": "✖"}


def register(sub) -> None:
    p = sub.add_parser("tasks", help="the task board of a profile")
    _profile_option(p)
    ps = p.add_subparsers(dest="action", metavar="ACTION")
    p.set_defaults(func=_list, all=False, json=False)  # plain `gpudeck tasks` lists the board

    ls = ps.add_parser("list", help="the board, grouped: in progress, pending, done")
    ls.add_argument("--all", action="store_true", help="also completed and cancelled tasks")
    _common(ls)
    ls.set_defaults(func=_list)

    add = ps.add_parser("add", help="add a task")
    add.add_argument("text")
    add.add_argument("--priority", choices=("high", "medium", "low"), default="medium")
    add.add_argument("--status", choices=("pending", "in_progress", "completed", "cancelled"),
                     default="pending")
    add.add_argument("--notes")
    _common(add)
    add.set_defaults(func=_add)

    edit = ps.add_parser("edit", help="change a task's text, priority, status or notes")
    edit.add_argument("id")
    edit.add_argument("--text")
    edit.add_argument("--priority", choices=("high", "medium", "low"))
    edit.add_argument("--status", choices=("pending", "in_progress", "completed", "cancelled"))
    edit.add_argument("--notes")
    _common(edit)
    edit.set_defaults(func=_edit)

    done = ps.add_parser("done", help="mark a task completed")
    done.add_argument("id")
    _common(done)
    done.set_defaults(func=_done)

    rm = ps.add_parser("rm", help="delete a task")
    rm.add_argument("id")
    _common(rm)
    rm.set_defaults(func=_rm)

    export = ps.add_parser("export", help="the board as Markdown (or JSON with --json)")
    _common(export)
    export.set_defaults(func=_export)

    sugg = ps.add_parser("suggestions", help="suggested tasks waiting for accept or dismiss")
    sugg.add_argument("--scan", action="store_true", help="first look through crashes/ and runs/ for new events")
    _common(sugg)
    sugg.set_defaults(func=_suggestions)

    accept = ps.add_parser("accept", help="turn a suggestion into a task")
    accept.add_argument("key")
    _common(accept)
    accept.set_defaults(func=_accept)

    dismiss = ps.add_parser("dismiss", help="turn a suggestion down for good")
    dismiss.add_argument("key")
    _common(dismiss)
    dismiss.set_defaults(func=_dismiss)

    threshold = ps.add_parser("threshold", help="efficiency %% below which a measurement suggests a task ('off' to stop)")
    threshold.add_argument("pct", nargs="?")
    _common(threshold)
    threshold.set_defaults(func=_threshold)


def _profile_option(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--profile", "-p", dest="tasks_profile", metavar="P", default=argparse.SUPPRESS,
                        help="profile whose board to use (default: the last used)")


def _common(parser: argparse.ArgumentParser) -> None:
    _profile_option(parser)
    parser.add_argument("--json", action="store_true", help="one JSON document on stdout")


def _board(args: argparse.Namespace):
    from profiles.tasks import TaskBoard

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
    from profiles.tasks import BoardReadOnly

    try:
        return action()
    except KeyError as exc:
        raise CLIError(str(exc.args[0]) if exc.args else "no such task") from None
    except (ValueError, BoardReadOnly) as exc:
        raise CLIError(str(exc)) from None


def _line(task) -> str:
    links = [f"{name}: {clean_line(getattr(task, name))}" for name in ("crash", "run", "config") if getattr(task, name)]
    tail = f"  [{'; '.join(links)}]" if links else ""
    clash = f"  (kept beside {task.conflict_of} after a clash)" if task.conflict_of else ""
    return f"{task.id:>4} {STATUS_MARK[task.status]} {task.priority:<6}  {clean_line(task.text)}{tail}{clash}"


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
        from ..store.suggest import offer_new

        offer_new(board.path.parent.name)
        board.reload()
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
    if args.key not in {s.key for s in board.suggestions}:
        raise CLIError(f"no suggestion {args.key!r} (see `gpudeck tasks suggestions`)")
    _edit_or_fail(lambda: board.dismiss(args.key))
    if args.json:
        emit_json({"dismissed": args.key})
    else:
        print(f"dismissed {clean_line(args.key)}")
    return 0


def _threshold(args: argparse.Namespace) -> int:
    board = _board(args)
    if args.pct is not None:
        if args.pct.lower() == "off":
            pct = None
        else:
            try:
                pct = float(args.pct.rstrip("%"))
            except ValueError:
                raise CLIError(f"bad threshold {args.pct!r}: a percentage like 10, or 'off'", 2) from None
            if not 0 < pct <= 100:
                raise CLIError(f"bad threshold {args.pct!r}: between 0 and 100", 2)
        _edit_or_fail(lambda: board.set_threshold(pct))
    value = board.threshold_pct
    if args.json:
        emit_json({"efficiency_threshold_pct": value})
    else:
        print("efficiency suggestions off" if value is None else f"efficiency threshold {value:g}%")
    return 0
