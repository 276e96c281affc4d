"""The fleet's one DCGM query, shaped so that its answer is small, and how that answer is read back.

Asked plainly, Prometheus repeats every label of a GPU (UUID, model name, bus
id, driver version, job...) on each of its eight or so series, and decoding
that repetition was most of what a refresh cost. So the query asks for two
kinds of rows instead:

- one *identity* row per GPU (per MIG instance, per pod), carrying exactly the
  labels `fold` reads (`ID_LABELS`), and a key `gpudeck_k`: those labels that
  tell one GPU from another (`KEY_LABELS`) joined with `|`;
- one *value* row per (GPU, field), carrying only the key and the field's
  short name (`gpudeck_f="GPU_UTIL"`).

Reading puts the identity's labels back on each value, so `fold` sees the same
series as from a plain answer and every number is what it was. A key is
trusted only when it is its identity row's labels joined; two GPUs whose
labels join to the same key (a `|` inside a label) are ambiguous: their values
are counted unreadable, never given to the wrong GPU, and each GPU is still
listed, every value unknown. A peer that
answers in the plain shape (every label on every series) is read as well.
`up` and each target's last scrape time come in the same answer, as before.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from .dcgm import ID_LABELS, SERIES_NAMES, host_of

TS_LABEL = "gpudeck_scrape_ts"
KEY = "gpudeck_k"
FIELD = "gpudeck_f"
SEP = "|"
KEY_LABELS = ("instance", "Hostname", "gpu", "device", "UUID", "GPU_I_ID")   # what fold tells GPUs apart by
PREFIX = "DCGM_FI_DEV_"
SEEN = "DCGM_FI_GPUDECK_SEEN"    # not a field fold reads: the GPU exists, nothing more is known
_NOTHING = ("",) * len(KEY_LABELS)      # a missing label joins as empty, as in label_join
FULL_NAME = {name[len(PREFIX):]: name for name in SERIES_NAMES}
assert all(name.startswith(PREFIX) for name in SERIES_NAMES) and set(KEY_LABELS) <= set(ID_LABELS)


def selector(matchers: str, extra: str) -> str:
    """`{extra, matchers}`: a selector narrowed to this fleet's part of Prometheus."""
    return "{" + ", ".join(m for m in (extra, matchers) if m) + "}"


def gpu_query(matchers: str) -> str:
    """Identity rows, value rows, every `up`, and each target's last scrape time, in one expression."""
    dcgm = selector(matchers, '__name__=~"' + "|".join(SERIES_NAMES) + '"')
    keyed = f'label_join({dcgm}, "{KEY}", "{SEP}", ' + ", ".join(f'"{label}"' for label in KEY_LABELS) + ")"
    identity = f"count by ({KEY}, {', '.join(ID_LABELS)}) ({keyed})"
    values = f'max by ({KEY}, {FIELD}) (label_replace({keyed}, "{FIELD}", "$1", "__name__", "{PREFIX}(.+)"))'
    up = selector(matchers, '__name__="up"')
    return f'{identity} or {values} or {up} or label_replace(timestamp({up}), "{TS_LABEL}", "1", "", "")'


@dataclass
class Read:
    """The answer sorted out: DCGM series for `fold`, each target's `up` and job, its last scrape."""

    series: list = field(default_factory=list)    # (name, labels, value)
    ups: dict = field(default_factory=dict)       # instance -> (up, job)
    scraped: dict = field(default_factory=dict)   # instance -> last scrape time
    unreadable: int = 0


def read_rows(rows: list, now: float, host_of_instance: dict[str, str]) -> Read:
    """The query's rows (labels, value, time) -> a `Read`; each DCGM target's host is noted in
    `host_of_instance` the first time it is seen."""
    out = Read()
    identities: dict[str, tuple[tuple, dict]] = {}
    ambiguous: dict[str, list[dict]] = {}        # key -> every identity that joins to it
    keyed: dict[str, list[tuple[str, float]]] = {}   # key -> its (field, value): a GPU's series together
    series = out.series
    for labels, value, _at in rows:
        key = labels.get(KEY)
        if key is not None:
            short = labels.get(FIELD)
            if short is not None:
                group = keyed.get(key)
                if group is None:
                    keyed[key] = [(short, value)]
                else:
                    group.append((short, value))
                continue
            parts = tuple(map(labels.get, KEY_LABELS, _NOTHING))
            if SEP.join(parts) != key:       # a key that is not its labels joined: not from our query
                out.unreadable += 1
                continue
            seen = identities.get(key)
            if seen is None:
                identities[key] = (parts, labels)
                _note_host(labels, host_of_instance)
            elif seen[0] != parts:
                ambiguous.setdefault(key, [seen[1]]).append(labels)
                _note_host(labels, host_of_instance)
            continue
        if labels.get(TS_LABEL):
            if 0 < value < now + 86400:      # a scrape time, not nonsense from a broken peer
                out.scraped[labels.get("instance", "?")] = value
            continue
        name = labels.get("__name__", "")
        if name == "up":
            out.ups[labels.get("instance", "?")] = (value == 1.0, labels.get("job", ""))
            continue
        series.append((name, labels, value))     # the plain shape: every label on the series
        _note_host(labels, host_of_instance)
    for key, group in keyed.items():
        identity = identities.get(key)
        if identity is None or key in ambiguous:
            out.unreadable += len(group)
            continue
        labels = identity[1]     # one object for all of a GPU's series: fold places the GPU once
        for short, value in group:
            name = FULL_NAME.get(short)
            if name is None:
                out.unreadable += 1
            else:
                series.append((name, labels, value))
    for labels_seen in ambiguous.values():
        series.extend((SEEN, labels, 0.0) for labels in labels_seen)
    return out


def _note_host(labels: dict, host_of_instance: dict[str, str]) -> None:
    instance = labels.get("instance", "?")
    if instance not in host_of_instance:
        host_of_instance[instance] = host_of(labels)
