"""A prompts file, checked whole once and then read a level's prompts at a time.

A 150 MB JSONL file of tiny prompts held as objects cost 1.2 GB, and was read
twice (the setup's check, then the sweep) before the first request. Here the
check is one pass that keeps the number of prompts, whether any is a chat, and
where every MARK_EVERY-th prompt's line starts; a level then draws its
positions and reads back just those prompts, each from the mark before it.
Memory follows a level's prompts, not the file. A ShareGPT file keeps the two
turns of each conversation from its check, as before: finding a conversation
again would mean decoding the list up to it.

Each JSONL line is decoded with the decoder's scanner and its end checked by
hand: `json.loads` spends most of its time per call matching white space, and
on millions of short lines that was most of the check.

The bench's setup, the sweep and a campaign all check a file with
`open_dataset`, so a file one refuses, the others refuse with the same line.
"""
from __future__ import annotations

import json
from dataclasses import dataclass
from pathlib import Path
from typing import Iterable

from .limits import MAX_DATASET_BYTES, MAX_DATASET_ITEM_CHARS

_SCAN = json.JSONDecoder().scan_once
_SPACE = " \t\r\n"
MARK_EVERY = 1 << 14      # a JSONL prompt in this many has its line's start noted


@dataclass(slots=True)
class DatasetItem:
    prompt: str | list               # text, or chat messages
    output_len: int | None = None    # from the file; None: the reply's length or --output-len
    reply: str | None = None         # ShareGPT: the answer whose length sets output_len


@dataclass(frozen=True)
class Dataset:
    """A checked prompts file: how many prompts it holds, and how to find them again.

    A JSONL file's prompts stay in the file (`marks`: where every MARK_EVERY-th
    prompt's line starts, so a level reads only the stretches that hold its
    prompts); a ShareGPT file's are the turns kept when it was checked
    (`items`), since finding a conversation again means decoding the list up to it.
    """

    path: Path
    kind: str                 # "jsonl" or "sharegpt"
    count: int
    has_messages: bool        # a JSONL line holds chat messages (needs --api chat)
    marks: tuple = ()
    items: tuple = ()

    def __len__(self) -> int:
        return self.count

    def take(self, positions: Iterable[int]) -> list[DatasetItem]:
        """The prompts at `positions` (0-based among the usable ones, repeats allowed), in that order.

        ValueError (one line) when the file no longer holds them as it did when checked.
        """
        wanted = list(positions)
        if self.kind != "jsonl":
            return [self.items[k] for k in wanted]
        try:
            found = _take_jsonl(self, sorted(set(wanted)))
            return [found[k] for k in wanted]
        except (OSError, ValueError, KeyError, IndexError):
            raise ValueError(f"dataset {self.path} changed since it was checked") from None


def dataset_format(path: str | Path, given: str | None = None) -> str:
    """The format a file is read in: the one given, else JSONL for a `.jsonl` name and ShareGPT otherwise."""
    return given or ("jsonl" if str(path).endswith(".jsonl") else "sharegpt")


def open_dataset(path: str | Path, kind: str) -> Dataset:
    """Check the whole file (every line or conversation, as the sweep reads it); keep no JSONL prompt.

    Raises ValueError with a one-line reason for a file that is not a dataset.
    """
    path = Path(path)
    if kind == "jsonl":
        marks: list[int] = []
        count, has_messages, _ = _read(path, lambda fh: _jsonl(fh, path, set(), marks))
        return Dataset(path, kind, count, has_messages, marks=tuple(marks))
    items = _read(path, lambda fh: _sharegpt(fh, path))
    return Dataset(path, kind, len(items), False, items=tuple(items))


def load_dataset(path: str | Path, kind: str) -> list[DatasetItem]:
    """Every prompt of the file in memory (small files; a sweep reads a `Dataset` a level at a time)."""
    path = Path(path)
    if kind == "jsonl":
        return list(_read(path, lambda fh: _jsonl(fh, path, None))[2].values())
    return _read(path, lambda fh: _sharegpt(fh, path))


def _read(path: Path, reader):
    """`reader(fh)` over the opened file, within the size cap; a read error is one line."""
    try:
        size = path.stat().st_size
        if not path.is_file():
            raise ValueError(f"dataset {path} is not a regular file")
        if size > MAX_DATASET_BYTES:
            raise ValueError(f"dataset {path} is {size / (1 << 30):.1f} GiB, above gpudeck's limit of "
                             f"{MAX_DATASET_BYTES >> 30} GiB")
        with open(path, encoding="utf-8") as fh:   # read as a stream: the file never sits in memory whole
            found = reader(fh)
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read dataset {path}: {getattr(exc, 'strerror', None) or exc}") from None
    if not (found[0] if isinstance(found, tuple) else found):
        raise ValueError(f"dataset {path} has no usable prompts")
    return found


def _take_jsonl(dataset: Dataset, wanted: list[int]) -> dict[int, DatasetItem]:
    """The prompts at the sorted positions `wanted`: from the mark before each stretch, read on to its last."""
    found: dict[int, DatasetItem] = {}
    with open(dataset.path, encoding="utf-8") as fh:
        i = 0
        while i < len(wanted):
            stretch = wanted[i] // MARK_EVERY
            first = stretch * MARK_EVERY
            j = i
            while j < len(wanted) and wanted[j] < first + MARK_EVERY:   # the stretch's positions
                j += 1
            fh.seek(dataset.marks[stretch])
            found.update(_jsonl(fh, dataset.path, set(wanted[i:j]), first=first, last=wanted[j - 1])[2])
            i = j
    return found


def _jsonl(fh, path: Path, keep: set[int] | None, marks: list[int] | None = None, first: int = 0,
           last: int | None = None) -> tuple[int, bool, dict[int, DatasetItem]]:
    """(usable prompts, whether one is a chat, the prompts at the positions in `keep`: all when None).

    The check of the file (`marks` given) decodes every line and notes where every
    MARK_EVERY-th prompt starts. A level's read (`last` given, from the mark of position
    `first`) decodes only the kept lines and stops after `last`.
    """
    n, k = 0, first
    chats = False
    found: dict[int, DatasetItem] = {}
    check = last is None
    next_mark = 0 if marks is not None else -1
    scan, limit, readline = _SCAN, MAX_DATASET_ITEM_CHARS, fh.readline
    while True:
        if k == next_mark:
            marks.append(fh.tell())
            next_mark += MARK_EVERY
        line = readline(limit + 1)
        if not line:
            break
        n += 1
        if len(line) > limit:
            raise ValueError(f"dataset {path} line {n}: longer than {limit:,} characters")
        start = 0
        if line[0] != "{":
            if not line.strip():
                continue
            start = len(line) - len(line.lstrip(_SPACE))
        kept = keep is None or k in keep
        if not check and not kept:
            k += 1
            continue
        try:
            doc, end = scan(line, start)
        except (StopIteration, ValueError, RecursionError):
            doc, end = None, -1
        if end < 0 or (end != len(line) - 1 or line[end] != "\n") and line[end:].strip(_SPACE):
            raise ValueError(f"dataset {path} line {n}: not JSON")
        if type(doc) is not dict:
            raise ValueError(f"dataset {path} line {n}: expected an object with prompt or messages")
        out_len = doc.get("output_len")
        if out_len is not None and (type(out_len) is not int or out_len <= 0):
            raise ValueError(f"dataset {path} line {n}: output_len must be an integer > 0")
        prompt = doc.get("prompt")
        if type(prompt) is not str:
            prompt = doc.get("messages")
            if not _is_messages(prompt):
                raise ValueError(f"dataset {path} line {n}: needs \"prompt\" (text) or \"messages\" (a chat)")
            chats = True
        if kept:
            found[k] = DatasetItem(prompt, out_len)
        if k == last:
            break
        k += 1
    return k, chats, found


def _is_messages(value) -> bool:
    return isinstance(value, list) and bool(value) and all(
        isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
        for m in value)


def _sharegpt(fh, path: Path) -> list[DatasetItem]:
    """Each conversation's first two turns, read one conversation at a time (json_stream)."""
    from .json_stream import iter_json_list

    items = []
    try:
        for entry in iter_json_list(fh, MAX_DATASET_ITEM_CHARS):
            item = _sharegpt_item(entry)
            if item is not None:
                items.append(item)
    except ValueError as exc:
        if str(exc) == "not a JSON list":
            raise ValueError(f"dataset {path}: ShareGPT format is a JSON list of conversations") from None
        raise ValueError(f"dataset {path}: {exc} (ShareGPT format is one JSON list)") from None
    return items


def _sharegpt_item(entry) -> DatasetItem | None:
    """A conversation's first turn as the prompt and its second as the reply; None when it has neither."""
    turns = entry.get("conversations") if isinstance(entry, dict) else None
    if not isinstance(turns, list) or len(turns) < 2:
        return None
    first, second = turns[0], turns[1]
    if not (isinstance(first, dict) and isinstance(second, dict)):
        return None
    prompt, reply = first.get("value"), second.get("value")
    if isinstance(prompt, str) and isinstance(reply, str) and prompt and reply:
        return DatasetItem(prompt, None, reply)
    return None
