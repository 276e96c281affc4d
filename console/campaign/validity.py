"""Which repeats of a level are not to be believed, and why: kept and shown, left out of the answer.

A repeat of a level enters the mean only when it measured what it claims:
- too many requests failed (more than `FAILED_MAX` of those sent; by default any, as the store's rule
  for a measured level has it): what finished is a survivor's view;
- no tokens came back: a rate of zero is a broken level, not a slow one;
- the server's own count of the tokens it generated (the `usage` of each
  response) is below the content chunks the client received by more than
  `COUNT_TOLERANCE` (every chunk holds at least one token, so a correct count
  is never below them), or the server counted tokens the client never saw;
- its spread is an outlier against the level's other repeats: the spread of its
  requests' TPOT (their coefficient of variation) lies outside the median ± k·MAD
  of the repeats' spreads (k = `MAD_K`; at least three repeats to judge), and beyond what the
  spread's own sampling error allows: a CV taken from four requests is itself uncertain by about
  a third of its value, so three repeats of four requests each differ that much by chance alone.
Pure functions over the level rows a campaign saves (`runner.level_row`, with
`samples` and `token_counts` from `samples`).
"""
from __future__ import annotations

import math
import statistics
from typing import Sequence

FAILED_MAX = 0.0           # a level with more failed requests than this share of those sent is invalid
COUNT_TOLERANCE = 0.10     # the server's token count may sit this far below the chunks received
MAD_K = 3.0                # a repeat's spread beyond the median ± k·MAD (scaled to a normal's sigma) is an outlier
MAD_SCALE = 1.4826
MIN_MAD_FRACTION = 0.10    # a MAD of (nearly) zero: spreads within 10% of the median still count as alike
# the MAD is never below this many standard errors of the median CV: a difference of two CVs has √2
# of one's error, widened for the skew of a CV taken from few values. Measured on alike repeats drawn
# at random (3 or 5 repeats, 4 to 16 requests, CV 5% to 40%): at most 2.5% of levels see an
# "outlier", against 4-14% with the MAD alone
SE_FLOOR = 2.0


def _num(value) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) \
        and math.isfinite(value) else None


def row_problems(row: dict, failed_max: float = FAILED_MAX) -> list[str]:
    """Why this one repeat of a level is invalid on its own ([] when it is not)."""
    out = []
    done, failed = _num(row.get("completed")) or 0.0, _num(row.get("failed")) or 0.0
    if done + failed > 0 and failed / (done + failed) > failed_max:
        out.append(f"{failed:.0f} of {done + failed:.0f} requests failed"
                   + (f" (more than {failed_max:.0%})" if failed_max else ""))
    tps = _num(row.get("output_throughput"))
    tokens = (row.get("samples") or {}).get("tokens") if isinstance(row.get("samples"), dict) else None
    if tps == 0 or (done > 0 and isinstance(tokens, list) and tokens and not any(tokens)):
        out.append("no tokens came back")
    counts = row.get("token_counts")
    if isinstance(counts, dict):
        server, client = _num(counts.get("server")), _num(counts.get("client"))
        if server is not None and client is not None:
            if client == 0 and server > 0:
                out.append(f"the server counted {server:.0f} tokens, the client received none")
            elif client > 0 and server < client * (1 - COUNT_TOLERANCE):
                out.append(f"the server counted {server:.0f} tokens, the client received {client:.0f} chunks")
    return out


def spread_of(row: dict) -> float | None:
    """The repeat's spread: its requests' TPOT coefficient of variation (None with fewer than 3 requests)."""
    samples = row.get("samples")
    values = [v for v in (samples.get("tpot_ms") or []) if _num(v) is not None] if isinstance(samples, dict) else []
    if len(values) < 3:
        return None
    mean = statistics.fmean(values)
    return statistics.stdev(values) / mean if mean > 0 else None


def _requests(row: dict) -> int:
    samples = row.get("samples")
    values = samples.get("tpot_ms") if isinstance(samples, dict) else None
    return sum(1 for v in values if _num(v) is not None) if isinstance(values, list) else 0


def cv_standard_error(cv: float, requests: int) -> float:
    """The standard error of a coefficient of variation taken from `requests` values (McKay's
    approximation for a normal sample: CV·√((1 + 2·CV²) / 2n))."""
    return cv * math.sqrt((1 + 2 * cv * cv) / (2 * max(requests, 1)))


def spread_outliers(rows: Sequence[dict], k: float = MAD_K) -> dict[int, str]:
    """Repeats (by index) whose spread is an outlier against the others: beyond the median ± k·MAD,
    where the MAD is never narrower than the spreads' own sampling error (from the repeat with the
    fewest requests): with few requests a repeat's CV is too uncertain to call any repeat odd."""
    spreads = {i: s for i, row in enumerate(rows) if (s := spread_of(row)) is not None}
    if len(spreads) < 3:
        return {}
    mid = statistics.median(spreads.values())
    mad = MAD_SCALE * statistics.median(abs(s - mid) for s in spreads.values())
    fewest = min(_requests(rows[i]) for i in spreads)
    mad = max(mad, MIN_MAD_FRACTION * mid, SE_FLOOR * cv_standard_error(mid, fewest))
    return {i: (f"its spread (TPOT CV {s:.0%}) is an outlier against the other repeats "
                f"(median {mid:.0%} ± {k:g}·MAD {mad:.0%})")
            for i, s in spreads.items() if abs(s - mid) > k * mad}


def invalid_repeats(rows: Sequence[dict]) -> dict[int, str]:
    """Every invalid repeat of one level (by index among `rows`), with why."""
    out = {i: "; ".join(p) for i, row in enumerate(rows) if (p := row_problems(row))}
    for i, why in spread_outliers(rows).items():
        out[i] = f"{out[i]}; {why}" if i in out else why
    return out
