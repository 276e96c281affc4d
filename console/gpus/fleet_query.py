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

Reading gives each GPU's values its identity's labels, so `fold` sees the same
GPUs as from a plain answer and every number is what it was. A key is
trusted only when it is its identity row's labels joined; two GPUs whose
labels join to the same key (a `|` inside a label) are ambiguous: their values
are counted unreadable, never given to the wrong GPU, and each GPU is still
listed, every value unknown. A peer that
answers in the plain shape (every label on every series) is read as well.
`up` and each target's last scrape time come in the same answer, as before.

The key in every row is short: the GPU's exporter, index and MIG instance
(`SHORT_KEY_LABELS`, some 16 bytes), not every label that tells GPUs apart
(`KEY_LABELS`, some 85 bytes with the UUID), which was most of an answer's
bytes at 1,024 GPUs. The identity rows carry every `KEY_LABELS` label, so the
reader checks that no two GPUs of this fleet share a short key (an exporter
that answers for several hosts, as a federation does, would); when two do,
that refresh asks again at once with the long key, and this reader keeps the
long key from then on. An answer keyed the long way (the old query) is read
as before.

A GPU's identity almost never changes, so `FleetReader` asks for identity rows
only now and then: on its first refresh, whenever a value row names a key it
has not seen (a GPU added, an exporter restarted under a new address: that
refresh asks again at once, identities included, so the GPU is shown
complete), and at least every `IDENTITY_EVERY_S`. In between only value rows
come, and each is given the labels its key had when identities were last
asked. What every refresh still answers for itself: which GPUs exist (one with
no value row is gone from that refresh on) and each number. What may lag, by
`IDENTITY_EVERY_S` and one refresh interval at most: a label outside the key
that changed under the same key (a pod or namespace, a model name, a bus id; with
the short key also a host name or a UUID: a GPU swapped under the same exporter and index),
and a clash of keys between identities (two GPUs joining to one key) that
began or ended since. A key that an answer with identities left without one
(only a broken peer sends such values) is counted unreadable on each refresh
until the next identity refresh, without asking again.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Callable

from . import prom_answer
from .dcgm import ID_LABELS, SERIES_NAMES, host_of
from .prom_answer import MAX_NUMBER_TEXT

TS_LABEL = "gpudeck_scrape_ts"
KEY = "gpudeck_k"
FIELD = "gpudeck_f"
SEP = "|"
KEY_LABELS = ("instance", "Hostname", "gpu", "device", "UUID", "GPU_I_ID")   # what fold tells GPUs apart by
SHORT_KEY_LABELS = ("instance", "gpu", "GPU_I_ID")    # what tells them apart in a fleet of plain exporters
PREFIX = "DCGM_FI_DEV_"
SEEN = "DCGM_FI_GPUDECK_SEEN"    # not a field fold reads: the GPU exists, nothing more is known
IDENTITY_EVERY_S = 30.0          # identities are asked again at least this often (see the docstring)
_NOTHING = ("",) * len(KEY_LABELS)      # a missing label joins as empty, as in label_join
_SHORT_AT = tuple(KEY_LABELS.index(label) for label in SHORT_KEY_LABELS)   # the short key's parts in the long one's
FULL_NAME = {name[len(PREFIX):]: name for name in SERIES_NAMES}
assert all(name.startswith(PREFIX) for name in SERIES_NAMES) and set(KEY_LABELS) <= set(ID_LABELS)
assert set(SHORT_KEY_LABELS) <= set(KEY_LABELS)


def selector(matchers: str, extra: str) -> str:
    """`{extra, matchers}`: a selector narrowed to this fleet's part of Prometheus."""
    return "{" + ", ".join(m for m in (extra, matchers) if m) + "}"


def gpu_query(matchers: str, identities: bool = True, short: bool = True) -> str:
    """Identity rows (unless `identities` is False), value rows, every `up`, and each target's last
    scrape time, in one expression; each GPU keyed by `SHORT_KEY_LABELS`, or by `KEY_LABELS` when
    `short` is False."""
    dcgm = selector(matchers, '__name__=~"' + "|".join(SERIES_NAMES) + '"')
    labels = SHORT_KEY_LABELS if short else KEY_LABELS
    keyed = f'label_join({dcgm}, "{KEY}", "{SEP}", ' + ", ".join(f'"{label}"' for label in labels) + ")"
    values = f'max by ({KEY}, {FIELD}) (label_replace({keyed}, "{FIELD}", "$1", "__name__", "{PREFIX}(.+)"))'
    up = selector(matchers, '__name__="up"')
    rest = f'{values} or {up} or label_replace(timestamp({up}), "{TS_LABEL}", "1", "", "")'
    if not identities:
        return rest
    return f"count by ({KEY}, {', '.join(ID_LABELS)}) ({keyed}) or {rest}"


@dataclass
class Read:
    """The answer sorted out: DCGM series for `fold`, each target's `up` and job, its last scrape."""

    gpus: list = field(default_factory=list)      # (labels, {series name: value}): `fold`'s `gpus`
    series: list = field(default_factory=list)    # (name, labels, value): the plain shape's, a clash's
    ups: dict = field(default_factory=dict)       # instance -> (up, job)
    scraped: dict = field(default_factory=dict)   # instance -> last scrape time
    unreadable: int = 0
    rows: int = 0                                 # how many rows the answer had


class FleetReader:
    """Asks for and reads the fleet's DCGM answer, one refresh after another, remembering each
    GPU's identity between the refreshes that ask for identities (see the module's docstring).

    `query()` is the expression for the next refresh; `read()` sorts its answer out, or returns
    None when a value row names a GPU whose identity is not known yet, or when two GPUs share a
    short key: then the next `query()` asks for identities (keyed the long way, for a clash), and
    that answer is read in full. Value rows, most of an answer, are
    checked and grouped by GPU in one pass; every other row is checked by `prom_answer` first."""

    def __init__(self, every_s: float = IDENTITY_EVERY_S, clock: Callable[[], float] = time.monotonic):
        self.every_s = every_s
        self._clock = clock
        self._known: dict[str, dict | list[dict]] = {}   # key -> its identity's labels; every one when ambiguous
        self._orphans: set[str] = set()    # keys with values and no identity in the last answer with identities
        self._asked_at: float | None = None   # when an answer with identities was last read
        self._asking = True                # whether the query last given asks for identities
        self._ambiguous: set[str] = set()   # keys that more than one identity joins to
        self._queries: dict[tuple[str, bool, bool], str] = {}
        self.short = True                  # whether the query keys GPUs by SHORT_KEY_LABELS (see the docstring)

    def query(self, matchers: str) -> str:
        self._asking = self._asked_at is None or self._clock() - self._asked_at >= self.every_s
        shape = self.short
        expr = self._queries.get((matchers, self._asking, shape))
        if expr is None:
            expr = self._queries[(matchers, self._asking, shape)] = gpu_query(matchers, self._asking, shape)
        return expr

    @property
    def asks_identities(self) -> bool:
        """Whether the query last given asked for identity rows."""
        return self._asking

    def read(self, data: Any, now: float, host_of_instance: dict[str, str]) -> Read | None:
        """The query's answer (its `data`) -> a `Read`, every series checked as `prom_answer` does; each
        DCGM target's host is noted in `host_of_instance` the first time it is seen. AnswerShapeError
        when the answer is not an instant vector at all."""
        out = Read()
        keyed: dict[str, dict[str, float]] = {}    # key -> {series name: value}: a GPU's values together
        others = []
        unreadable = 0
        full_name, isfinite, finite_at = FULL_NAME, math.isfinite, None
        items = prom_answer.instant_results(data)
        for item in items:    # value rows, most of the answer, read here at once; the rest checked below
            if type(item) is dict:
                metric, pair = item.get("metric"), item.get("value")
                if type(metric) is dict and len(metric) == 2 and type(pair) is list and len(pair) == 2:
                    key, short = metric.get(KEY), metric.get(FIELD)
                    at, text = pair
                    if type(key) is str and type(short) is str and type(text) is str \
                            and len(text) <= MAX_NUMBER_TEXT and type(at) is float \
                            and (at == finite_at or isfinite(at)):
                        finite_at = at
                        name = full_name.get(short)
                        try:
                            value = float(text)
                        except ValueError:
                            name = None
                        if name is None:
                            unreadable += 1
                            continue
                        values = keyed.get(key)
                        if values is None:
                            keyed[key] = {name: value}
                        else:
                            values[name] = value
                        continue
            others.append(item)
        checked = prom_answer.vector_items(others)
        out.rows = len(items)
        out.unreadable = unreadable + checked.unreadable
        fresh: dict[str, tuple[tuple, dict]] = {}     # key -> the first identity this answer gave it
        clashes: dict[str, list[dict]] = {}          # key -> every identity that joins to it
        short_clash = False                          # whether two of them share a short key
        series = out.series
        for labels, value, _at in checked.rows:
            key = labels.get(KEY)
            if key is not None:
                short = labels.get(FIELD)
                if short is not None:
                    name = full_name.get(short)
                    if name is None:
                        out.unreadable += 1
                    else:
                        keyed.setdefault(key, {})[name] = value
                    continue
                parts = tuple(map(labels.get, KEY_LABELS, _NOTHING))
                short = SEP.join([parts[i] for i in _SHORT_AT]) == key
                if not short and SEP.join(parts) != key:
                    out.unreadable += 1          # a key that is not its labels joined: not from our query
                    continue
                seen = fresh.get(key)
                if seen is None:
                    fresh[key] = (parts, labels)
                    _note_host(labels, host_of_instance)
                elif seen[0] != parts:
                    short_clash = short_clash or short
                    clashes.setdefault(key, [seen[1]]).append(labels)
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
        known = self._learn(fresh, clashes, keyed, short_clash)
        if known is None:
            return None
        gpus = out.gpus
        for key, values in keyed.items():
            labels = known.get(key)
            if labels is None or type(labels) is list:     # no identity, or ambiguous: no numbers
                if labels is None:
                    self._orphans.add(key)
                out.unreadable += len(values)
            else:
                gpus.append((labels, values))
        for key in self._ambiguous:      # each GPU of a clash that this answer names listed, nothing known
            if key in keyed or key in clashes:
                series.extend((SEEN, labels, 0.0) for labels in known[key])
        return out

    def _learn(self, fresh: dict, clashes: dict, keyed: dict, short_clash: bool) -> dict | None:
        """The identities to read this answer with, this answer's own learnt; None when a value row
        names a key no identity was given for since identities were last asked, or when GPUs share
        a short key."""
        learnt = {key: clashes.get(key) or labels for key, (_parts, labels) in fresh.items()}
        if short_clash and self._asking:
            self.short = False            # GPUs that share a short key: asked again, and from now on, the long way
            self._asked_at = None
            return None
        if self._asking:
            self._known, self._asked_at, self._orphans = learnt, self._clock(), set()
            self._ambiguous = set(clashes)
            return learnt
        known = self._known
        if learnt:     # a peer that sends identities unasked: taken as they come
            known.update(learnt)
            self._ambiguous = {key for key, labels in known.items() if type(labels) is list}
        orphans = self._orphans
        for key in keyed:
            if key not in known and key not in orphans:
                self._asked_at = None     # a GPU new since identities were asked: the next query asks
                return None
        return known


def _note_host(labels: dict, host_of_instance: dict[str, str]) -> None:
    instance = labels.get("instance", "?")
    if instance not in host_of_instance:
        host_of_instance[instance] = host_of(labels)
