"""Saved nvidia-smi output of any form -> one Snapshot.

Tries, in order: the default table (with MIG and processes), the full
query (`nvidia-smi -q`), `nvidia-smi -L`,
query CSV (with or without header/units), and only then the known error
texts, so that a real table is never mistaken for an error. Anything else is
`unparsed`, with a reason.
"""
from __future__ import annotations

import re

from .errors import recognise
from .flags import FlagTracker, STALE_SAMPLES
from .model import OK, UNPARSED, Snapshot, known
from .parse_csv import SEP, parse_csv_lines, snapshot_cells_note
from .parse_list import parse_list_lines
from .parse_query import looks_like_query, parse_query_lines
from .parse_table import parse_table_lines

_QUOTE = re.compile(r"^\s{0,3}(?:>\s?)+")


def clean_lines(text: str) -> list[str]:
    """Lines without markdown quote markers or carriage returns; indentation kept."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").expandtabs(8)
    return [_QUOTE.sub("", line) for line in text.split("\n")]


def parse_text(text: str, stale_after: int = STALE_SAMPLES) -> Snapshot:
    """Saved output -> Snapshot with flags.

    A saved file holds what it holds: when it has fewer samples than
    `stale_after`, the stale pattern is judged on all of them (one table is
    one sample), rather than never flagged.
    """
    lines = clean_lines(text)
    if not any(line.strip() for line in lines):
        return Snapshot(state=UNPARSED, message="empty input", source="file")

    table = parse_table_lines(lines)
    if table.found:
        snap = Snapshot(state=OK, gpus=table.gpus, processes=table.processes,
                        processes_known=table.processes_known, source="file")
        driver = f", driver {table.driver}" if table.driver else ""
        snap.message = f"nvidia-smi table{driver}: {_count(len(table.gpus))}"
        if not table.processes_known:
            snap.message += "; no process list in the input"
        return FlagTracker(1).apply(snap)

    if looks_like_query(lines):
        query = parse_query_lines(lines)
        if query.found:
            snap = Snapshot(state=OK, gpus=query.gpus, processes=query.processes,
                            processes_known=query.processes_known, source="file")
            driver = f", driver {query.driver}" if query.driver else ""
            snap.message = f"nvidia-smi -q{driver}: {_count(len(query.gpus))}"
            if query.gpus and not known(query.gpus[0].index):
                snap.message += "; GPU index unknown (not every attached GPU is listed)"
            if not query.processes_known:
                snap.message += "; no process list in the input"
            return FlagTracker(1).apply(snap)

    listed = parse_list_lines(lines)
    if listed:
        snap = Snapshot(state=OK, gpus=listed, source="file",
                        message=f"nvidia-smi -L: {_count(len(listed))}; no metrics in this form")
        return FlagTracker(1).apply(snap)

    csv = parse_csv_lines(lines)
    if csv.found:
        tracker = FlagTracker(max(1, min(stale_after, len(csv.samples))))
        snap = Snapshot(state=OK, processes=csv.processes, processes_known=csv.saw_apps, source="file")
        for sample in csv.samples or [[]]:
            snap.gpus = sample
            tracker.apply(snap)
        snap.samples = max(1, len(csv.samples))
        snap.rejected_lines = len(csv.rejected)
        parts = []
        if csv.samples:
            parts.append(f"query CSV: {_count(len(snap.gpus))}"
                         + (f", last of {len(csv.samples)} samples" if len(csv.samples) > 1 else ""))
        if csv.saw_apps:
            parts.append(f"{len(csv.processes)} compute process(es)")
        if csv.cut_off:
            parts.append("an incomplete last sample was left out")
        note = snapshot_cells_note(csv.rejected)
        if note:
            parts.append(note)
        snap.message = "; ".join(parts)
        return snap

    error = recognise(lines)
    if error:
        return Snapshot(state=error.state, message=error.message, source="file")

    return Snapshot(state=UNPARSED, message=_why_unparsed(lines, csv.rejected), source="file")


def _count(n: int) -> str:
    return f"{n} GPU" if n == 1 else f"{n} GPUs"


def _why_unparsed(lines: list[str], rejected: list[str]) -> str:
    if rejected:
        width = len(rejected[0].split(SEP))
        return (f"{len(rejected)} comma-separated line(s) of {width} values with no header line: "
                "cannot tell which fields they are")
    first = next(line.strip() for line in lines if line.strip())
    return f"no nvidia-smi table, CSV or known error message found (first line: {first[:60]!r})"
