"""The task board on disk: `<profile data dir>/tasks.toml`, its one reader and its one writer.

    version = 1
    next_id = 8                      # ids are never reused
    efficiency_threshold_pct = 10.0  # below this, an efficiency suggests a task
    dismissed = ["crash:...", ...]   # suggestions the operator turned down
    [[tasks]]        id, text, status, priority, order, created, updated, notes,
                     crash, run, config, source, conflict_of
    [[suggestions]]  key, text, kind, priority, crash, run, config, created

`read_board` reads a regular file under a size cap and checks every table,
naming the line of the first bad one; a missing file is an empty board.
`write_board` replaces the file atomically, and every writer holds
`board_lock` from its re-read to its write (console.store.task_board merges
there). What the board decides (merging, order, suggestions) is profiles.tasks.
"""
from __future__ import annotations

import fcntl
import os
import re
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator, TypeVar

from profiles import paths
from profiles.atomic import StateFileError, parse_toml, write_toml
from profiles.task_model import Task, task_from_dict
from profiles.task_suggestion import Suggestion, suggestion_from_dict
from profiles.tasks import DEFAULT_THRESHOLD_PCT, FILE_VERSION, BoardState

from .files import FileRefused, read_capped
from .scan import Scan, Unreadable

KIND = "task board"
MAX_TASKS_FILE_BYTES = 32 << 20   # thousands of tasks take a few MB; past this it is not a board gpudeck wrote
T = TypeVar("T")
KEYS = {"version", "next_id", "tasks", "suggestions", "dismissed", "efficiency_threshold_pct"}


def tasks_file(profile_name: str) -> Path:
    return paths.profile_data_dir(profile_name) / "tasks.toml"


def _line_of_table(text: str, table: str, index: int) -> int | None:
    """Line number of the index-th `[[table]]` header (for errors found after parsing)."""
    pattern = re.compile(rf"^[ \t]*\[\[[ \t]*{re.escape(table)}[ \t]*\]\]", re.M)
    for i, match in enumerate(pattern.finditer(text)):
        if i == index:
            return text.count("\n", 0, match.start()) + 1
    return None


def _text(path: Path) -> str:
    """The file's text (a regular file under the cap, UTF-8), newlines made `\\n`; StateFileError if not."""
    try:
        raw = read_capped(path, MAX_TASKS_FILE_BYTES)
    except FileNotFoundError:
        raise StateFileError(path, "file not found") from None
    except FileRefused as exc:
        raise StateFileError(path, str(exc).removeprefix(f"{path}: ")) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise StateFileError(path, f"not UTF-8 text ({exc.reason})") from None
    return text.replace("\r\n", "\n").replace("\r", "\n")


def _tables(doc: dict[str, Any], table: str, parse: Callable[[Any], T], text: str,
            fail: Callable[..., StateFileError]) -> Iterator[tuple[int, T]]:
    """Each `[[table]]` of the file parsed, with its index; the first bad one fails naming its line."""
    raw = doc.get(table, [])
    if not isinstance(raw, list):
        raise fail(f"'{table}' must be an array of tables [[{table}]]")
    for index, item in enumerate(raw):
        try:
            yield index, parse(item)
        except ValueError as exc:   # TaskFormatError is one
            raise fail(str(exc), _line_of_table(text, table, index)) from None


def read_board(path: Path) -> BoardState:
    """The one reader: tasks.toml parsed and checked; a missing file is an empty board, a broken
    one raises StateFileError naming its line."""
    path = Path(path)
    if not path.exists():
        return BoardState()
    text = _text(path)
    try:
        doc = parse_toml(path, text)
    except StateFileError as exc:
        if exc.line is None and "end of document" in exc.reason:
            # tomllib names no line for a file cut short: the last line is the one.
            raise StateFileError(path, exc.reason, max(text.count("\n"), 1)) from None
        raise

    def fail(reason: str, line: int | None = None) -> StateFileError:
        return StateFileError(path, reason, line)

    version = doc.get("version", FILE_VERSION)
    if version != FILE_VERSION:
        raise fail(f"unknown tasks file version {version!r} (this gpudeck reads {FILE_VERSION})")
    tasks: dict[int, Task] = {}
    for index, task in _tables(doc, "tasks", task_from_dict, text, fail):
        if task.id in tasks:
            raise fail(f"task id {task.id} appears twice", _line_of_table(text, "tasks", index))
        tasks[task.id] = task
    suggestions: dict[str, Suggestion] = {
        s.key: s for _, s in _tables(doc, "suggestions", suggestion_from_dict, text, fail)}
    dismissed = doc.get("dismissed", [])
    if not isinstance(dismissed, list) or not all(isinstance(k, str) for k in dismissed):
        raise fail("'dismissed' must be a list of strings")
    next_id = doc.get("next_id", 1)
    if not isinstance(next_id, int) or isinstance(next_id, bool) or next_id < 1:
        raise fail("'next_id' must be a positive integer")
    threshold = doc.get("efficiency_threshold_pct", DEFAULT_THRESHOLD_PCT)
    if threshold == "off":
        threshold = None
    elif isinstance(threshold, bool) or not isinstance(threshold, (int, float)):
        raise fail("'efficiency_threshold_pct' must be a number or \"off\"")
    unknown = set(doc) - KEYS
    if unknown:
        raise fail(f"unknown key {sorted(unknown)[0]!r}")
    return BoardState(tasks, max(next_id, max(tasks, default=0) + 1), suggestions,
                      frozenset(dismissed), None if threshold is None else float(threshold))


def read_tasks(profile_name: str) -> Scan[BoardState]:
    """The profile's board as a `Scan`, like every store reader: the board, or one `Unreadable` line."""
    path = tasks_file(profile_name)
    try:
        return Scan(records=[read_board(path)])
    except StateFileError as exc:
        where = f"line {exc.line}: " if exc.line else ""
        return Scan(unreadable=[Unreadable(path, KIND, where + exc.reason)])


def write_board(path: Path, state: BoardState) -> None:
    """The one writer: the whole board, replaced atomically (0600). Hold `board_lock` around the
    re-read and the write, so no other console's edit is lost."""
    write_toml(path, state.to_toml())


@contextmanager
def board_lock(path: Path) -> Iterator[None]:
    """The flock on `tasks.toml.lock` every writer of the board holds."""
    lock = Path(path).with_name(Path(path).name + ".lock")
    lock.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(lock, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


class FileWatch:
    """Notices that a file changed on disk (new inode, mtime or size): cheap enough to poll twice a second."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self._seen = self._signature()

    def _signature(self) -> tuple[int, int, int] | None:
        try:
            st = os.stat(self.path)
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns, st.st_size)

    def changed(self) -> bool:
        """True once per change since the last call (or the last `mark`)."""
        now = self._signature()
        if now != self._seen:
            self._seen = now
            return True
        return False

    def mark(self) -> None:
        """Our own write: do not report it as a change."""
        self._seen = self._signature()
