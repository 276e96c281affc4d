"""The highest load under an SLO: per config, the most concurrent streams at which the SLO still holds.

The question an operator asks is a load, not a winner at a level: "how many
users can this config serve with p99 TTFT ≤ 2 s and p99 TPOT ≤ 50 ms?". With a
`[slo]` table in the campaign file, each visit of a cell searches for it on the
running server: it brackets (1, 2, 4, ... doubling until the SLO fails or
`max_concurrency` is reached), then bisects between the last level that held
and the first that failed, and measures the boundary again (`boundary_repeats`
in all) so one lucky run does not set it. The answer is a bracket: the SLO
held at `max_ok` and failed at `first_fail` (None: it held up to the cap).

    [slo]
    ttft_p99_ms = 2000      # any of: ttft_p99_ms, tpot_p99_ms, itl_p99_ms
    tpot_p99_ms = 50
    goodput = 0.9           # vLLM's goodput: the share of requests meeting every per-request limit
                            # (ttft_ms / tpot_ms / itl_ms / e2el_ms, given to the load generator)
    ttft_ms = 2000
    max_concurrency = 64
    boundary_repeats = 2

The search is pure: `search` takes the probe (one level on the running server)
as a function; `runner` gives it the real one.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Awaitable, Callable

P99_KEYS = (("ttft_p99_ms", "ttft_p99", "TTFT p99"), ("tpot_p99_ms", "tpot_p99", "TPOT p99"),
            ("itl_p99_ms", "itl_p99", "ITL p99"))
REQUEST_KEYS = ("ttft_ms", "tpot_ms", "itl_ms", "e2el_ms")     # per-request limits, for goodput
KNOWN = {k for k, _f, _l in P99_KEYS} | set(REQUEST_KEYS) | {"goodput", "max_concurrency", "boundary_repeats"}
MAX_PROBES = 24            # a search never measures more levels than this in one visit


class SloError(ValueError):
    """A bad [slo] table: one line naming the key."""


@dataclass(frozen=True)
class Slo:
    limits: dict[str, float]                 # p99 limits, by the level row's field (ttft_p99, ...)
    request_limits: dict[str, float]         # per-request limits in ms (the load generator's --slo)
    goodput: float | None = None             # least share of requests meeting every per-request limit
    max_concurrency: int = 64
    boundary_repeats: int = 2

    def label(self) -> str:
        parts = [f"{label} ≤ {self.limits[f]:g} ms" for _k, f, label in P99_KEYS if f in self.limits]
        if self.goodput is not None:
            parts.append(f"goodput ≥ {self.goodput:.0%} of requests")
        return ", ".join(parts) or "no limit"

    def to_json(self) -> dict:
        doc: dict = {k: self.limits[f] for k, f, _l in P99_KEYS if f in self.limits}
        doc.update(self.request_limits)
        if self.goodput is not None:
            doc["goodput"] = self.goodput
        return doc | {"max_concurrency": self.max_concurrency, "boundary_repeats": self.boundary_repeats}


def parse(doc, where: str = "<campaign>") -> Slo | None:
    """The [slo] table, checked (None when the campaign has none)."""
    if doc is None:
        return None
    if not isinstance(doc, dict) or not doc:
        raise SloError(f"{where}: key 'slo': expected a table of limits, e.g. {{ ttft_p99_ms = 2000 }}")
    for key, value in doc.items():
        if key not in KNOWN:
            raise SloError(f"{where}: key 'slo.{key}': expected one of {', '.join(sorted(KNOWN))}, got unknown key")
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise SloError(f"{where}: key 'slo.{key}': expected a positive number, got {value!r}")
    goodput = doc.get("goodput")
    if goodput is not None and goodput > 1:
        raise SloError(f"{where}: key 'slo.goodput': expected a share of requests from 0 to 1, got {goodput!r}")
    request = {k: float(doc[k]) for k in REQUEST_KEYS if k in doc}
    if goodput is not None and not request:
        raise SloError(f"{where}: key 'slo.goodput': needs a per-request limit (ttft_ms, tpot_ms, itl_ms or e2el_ms)")
    limits = {f: float(doc[k]) for k, f, _l in P99_KEYS if k in doc}
    if not limits and goodput is None:
        raise SloError(f"{where}: key 'slo': expected a p99 limit (ttft_p99_ms, tpot_p99_ms, itl_p99_ms) or goodput")
    most = doc.get("max_concurrency", 64)
    reps = doc.get("boundary_repeats", 2)
    for key, value, cap in (("max_concurrency", most, 100_000), ("boundary_repeats", reps, 10)):
        if not isinstance(value, int) or value > cap:
            raise SloError(f"{where}: key 'slo.{key}': expected a whole number up to {cap}, got {value!r}")
    return Slo(limits=limits, request_limits=request, goodput=float(goodput) if goodput is not None else None,
               max_concurrency=most, boundary_repeats=reps)


def holds(row: dict, slo: Slo) -> tuple[bool, str]:
    """Whether one measured level meets the SLO, and if not, which limit it broke."""
    if row.get("status") != "ok" or row.get("failed"):
        return False, f"level {row.get('status')}" + (f", {row.get('failed')} failed" if row.get("failed") else "")
    for _k, f, label in P99_KEYS:
        limit = slo.limits.get(f)
        value = row.get(f)
        if limit is not None and (not isinstance(value, (int, float)) or value > limit):
            return False, f"{label} {value if value is None else round(value, 1)} ms > {limit:g}"
    if slo.goodput is not None:
        good, done = row.get("good_requests"), row.get("completed")
        share = good / done if isinstance(good, int) and isinstance(done, int) and done > 0 else None
        if share is None or share < slo.goodput:
            return False, f"goodput {'unknown' if share is None else f'{share:.0%}'} < {slo.goodput:.0%}"
    return True, ""


@dataclass
class Search:
    max_ok: int | None = None                # the highest level at which the SLO held (every time measured)
    first_fail: int | None = None            # the lowest level at which it failed (None: held up to the cap)
    probes: list[dict] = field(default_factory=list)   # {"concurrency", "holds", "why"}, in the order measured
    capped: bool = False                     # held at max_concurrency: the answer is at least that

    def to_json(self) -> dict:
        return dict(self.__dict__)


Probe = Callable[[int], Awaitable["dict | None"]]


async def search(probe: Probe, slo: Slo) -> Search:
    """Bracket (doubling from 1), bisect, then measure the boundary again; `probe(c)` is one level's row
    (None when the server could not measure it: the search ends there, with what it knew)."""
    out = Search()
    verdicts: dict[int, bool] = {}

    async def check(c: int) -> bool | None:
        if len(out.probes) >= MAX_PROBES:
            return None
        row = await probe(c)
        if row is None:
            return None
        ok, why = holds(row, slo)
        out.probes.append({"concurrency": c, "holds": ok, "why": why})
        verdicts[c] = verdicts.get(c, True) and ok     # a boundary holds only if it held every time
        return ok

    c, top = 1, max(1, slo.max_concurrency)
    while True:                                  # bracket
        ok = await check(c)
        if ok is None:
            return _ended(out, verdicts)
        if not ok:
            break
        if c >= top:
            out.capped = True
            break
        c = min(top, c * 2)
    lo = max((k for k, v in verdicts.items() if v), default=0)
    hi = min((k for k, v in verdicts.items() if not v), default=None)
    while hi is not None and hi - lo > 1:        # bisect
        mid = (lo + hi) // 2
        ok = await check(mid)
        if ok is None:
            return _ended(out, verdicts)
        lo, hi = (mid, hi) if ok else (lo, mid)
    while lo > 0:                                # the boundary, measured again
        for _ in range(max(0, slo.boundary_repeats - sum(1 for p in out.probes if p["concurrency"] == lo))):
            if await check(lo) is None:
                return _ended(out, verdicts)
        if verdicts[lo]:
            break
        hi, lo = lo, max((k for k, v in verdicts.items() if v and k < lo), default=0)   # it failed on a repeat
        while hi - lo > 1:
            mid = (lo + hi) // 2
            ok = await check(mid)
            if ok is None:
                return _ended(out, verdicts)
            lo, hi = (mid, hi) if ok else (lo, mid)
    return _ended(out, verdicts)


def _ended(out: Search, verdicts: dict[int, bool]) -> Search:
    fails = [k for k, v in verdicts.items() if not v]
    out.first_fail = min(fails) if fails else None
    out.max_ok = max((k for k, v in verdicts.items() if v and (out.first_fail is None or k < out.first_fail)),
                     default=None)
    out.capped = out.first_fail is None and out.max_ok is not None and out.capped
    return out


def combine(searches: list[dict]) -> dict:
    """One config's answer over its visits: the max it held every time, and the interval the visits span
    (lowest level held … highest level held, below the lowest first failure)."""
    held = [s.get("max_ok") for s in searches if isinstance(s, dict)]
    if not held:
        return {"max_concurrency": None, "interval": None, "visits": 0}
    known = [h if isinstance(h, int) else 0 for h in held]
    fails: list[int] = [f for s in searches if isinstance(f := s.get("first_fail"), int)]
    return {"max_concurrency": min(known) or None, "interval": [min(known), max(known)],
            "first_fail": min(fails) if fails else None, "visits": len(held),
            "capped": all(bool(s.get("capped")) for s in searches)}
