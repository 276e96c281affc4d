"""What a level's timeline says by itself: one-line notes, each marked as an inference, with its rule.

A note is written only where the data holds every part of its rule; a series
that was not recorded (no /metrics, no GPU samples) makes its rule silent,
never a guess. The rules:

- KV cache: in the level's last third the KV cache read >= 95% on at least
  half the scrapes, the preemption counter rose during the level, and the
  client's tok/s in the last third averaged below 90% of the level's best
  second: "the KV cache is the limit at this level".
- Power: on some GPU, on at least half its samples of the level, power was
  >= 97% of its limit while the SM clock was >= 10% below its maximum:
  "power-throttled".
- Scheduler cap: requests waited on at least a third of the loaded scrapes (and on
  two or more) while the most running was below the server's sequence cap
  (`--max-num-seqs`, `--max-running-requests`, `-np`): "the scheduler cap";
  running at the cap with requests waiting: the sequence cap itself.
- Hang before the crash: the server died during the level and the last
  token of any request came before the first failure by at least
  HANG_NOTE_S, and by at least HANG_ITL_TIMES the run's p99 inter-token
  gap (so a long prefill of a big batch is not called a hang).
"""
from __future__ import annotations

import time
from datetime import datetime

from console.store.timeline import FIELDS, TimelineWriter

PREFIX = "inference: "
KV_FULL = 0.95
TPUT_FELL = 0.9
POWER_AT_CAP = 0.97
CLOCK_BELOW = 0.9
HANG_NOTE_S = 2.0
HANG_ITL_TIMES = 10.0
SEQ_CAP_FLAGS = ("max-num-seqs", "max_num_seqs", "max-running-requests", "max_running_requests", "np",
                 "parallel")


def _rows(tl: TimelineWriter, name: str, t0: float, t1: float) -> list[dict]:
    names = ("t", *FIELDS[name])
    return [dict(zip(names, p)) for p in tl.series[name].points if t0 <= p[0] <= t1]


def _window(tl: TimelineWriter, level: int) -> tuple[float, float]:
    starts = [m["t"] for m in tl.marks if m["level"] == level and m["kind"] == "level-start"]
    return (starts[-1] if starts else 0.0), tl.now()


def _seq_cap(flags: dict | None) -> int | None:
    for key in SEQ_CAP_FLAGS:
        value = (flags or {}).get(key)
        if isinstance(value, bool):
            continue
        try:
            cap = int(str(value))
        except (TypeError, ValueError):
            continue
        if cap >= 1:
            return cap
    return None


def kv_limit(tl: TimelineWriter, t0: float, t1: float) -> str | None:
    server = [r for r in _rows(tl, "server", t0, t1) if r["kv_cache"] is not None]
    client = [r["output_tok_s"] for r in _rows(tl, "client", t0, t1) if r["output_tok_s"] is not None]
    if len(server) < 3 or len(client) < 3:
        return None
    late_from = t0 + (t1 - t0) * 2 / 3
    late_server = [r for r in server if r["t"] >= late_from]
    full = [r for r in late_server if r["kv_cache"] >= KV_FULL]
    pre = [r["preemptions"] for r in server if r["preemptions"] is not None]
    late_client = client[len(client) * 2 // 3:]
    best = max(client)
    fell = best > 0 and sum(late_client) / len(late_client) < TPUT_FELL * best
    if late_server and len(full) * 2 >= len(late_server) and len(pre) >= 2 and pre[-1] > pre[0] and fell:
        return (f"throughput fell while KV cache stayed at {max(r['kv_cache'] for r in full):.0%} and preemptions "
                f"rose by {pre[-1] - pre[0]:g}: the KV cache is the limit at this level")
    return None


def power_throttled(tl: TimelineWriter, t0: float, t1: float) -> str | None:
    by_gpu: dict[int, list[dict]] = {}
    for r in _rows(tl, "gpu", t0, t1):
        by_gpu.setdefault(r["index"], []).append(r)
    for index, rows in sorted(by_gpu.items()):
        known = [r for r in rows if None not in (r["power_w"], r["power_limit_w"], r["sm_clock_mhz"],
                                                 r["sm_clock_max_mhz"]) and r["power_limit_w"] > 0
                 and r["sm_clock_max_mhz"] > 0]
        hit = [r for r in known if r["power_w"] >= POWER_AT_CAP * r["power_limit_w"]
               and r["sm_clock_mhz"] <= CLOCK_BELOW * r["sm_clock_max_mhz"]]
        if len(known) >= 2 and len(hit) * 2 >= len(known):
            below = 1 - sum(r["sm_clock_mhz"] / r["sm_clock_max_mhz"] for r in hit) / len(hit)
            return (f"GPU {index} power at the cap and SM clock {below:.0%} below max: power-throttled")
    return None


def scheduler_cap(tl: TimelineWriter, t0: float, t1: float, cap: int | None) -> str | None:
    if cap is None:
        return None
    # the readings that saw load: the level's first and last scrapes (before its first request,
    # after its last) read an idle server and say nothing of its scheduler
    server = [r for r in _rows(tl, "server", t0, t1) if r["running"] is not None and r["waiting"] is not None
              and (r["running"] > 0 or r["waiting"] > 0)]
    waiting = [r for r in server if r["waiting"] > 0]
    if len(waiting) < 2 or len(waiting) * 3 < len(server):
        return None
    most = max(r["running"] for r in server)
    if most < cap:
        return (f"requests waiting while running stayed below max-num-seqs ({most:g} of {cap}): "
                f"the scheduler cap")
    return f"requests waiting while running reached max-num-seqs ({cap}): the sequence cap is the limit"


def hung_before_crash(tl: TimelineWriter, level: int, t0: float, t1: float, died: dict | None,
                      itl_p99_ms: float | None = None) -> str | None:
    if not died:
        return None
    failures = [m["t"] for m in tl.marks if m["level"] == level and m["kind"] == "first failure"]
    if not failures:
        return None
    death = min(failures)
    tokens = [t for r in _rows(tl, "requests", t0 - 3600, t1) if r["level"] == level
              for t in (r["end"], r["first_token"]) if t is not None and t <= death]
    if not tokens:
        return None
    gap = death - max(tokens)
    if gap < max(HANG_NOTE_S, HANG_ITL_TIMES * (itl_p99_ms or 0.0) / 1000):
        return None
    at = time.strftime("%H:%M:%S", time.localtime(tl.wall0 + death))
    return f"no token for {gap:.0f} s before the server died at {at}: hung before the crash"


def for_level(tl: TimelineWriter, level: int, doc: dict, flags: dict | None,
              itl_p99_ms: float | None = None) -> list[str]:
    """The level's inferences, each one line starting with `inference: `. `itl_p99_ms`: the run's
    p99 inter-token gap so far (this level's, else the last level's that had one)."""
    t0, t1 = _window(tl, level)
    died = doc.get("server_died") if isinstance(doc.get("server_died"), dict) else None
    found = [kv_limit(tl, t0, t1), power_throttled(tl, t0, t1), scheduler_cap(tl, t0, t1, _seq_cap(flags)),
             hung_before_crash(tl, level, t0, t1, died, itl_p99_ms)]
    return [PREFIX + note for note in found if note]


def mark_crash(tl: TimelineWriter, profile: str, launch_id: str | None, level: int) -> bool:
    """The crash's decisive log line as a mark, at the death's time in its crash record; False when
    there is no crash record (yet) or its time can't be read."""
    from console.store.crashes import crash_of_launch

    crash = crash_of_launch(profile, launch_id) if launch_id else None
    if crash is None:
        return False
    try:
        wall = datetime.strptime(crash.time, "%Y-%m-%dT%H:%M:%S%z").timestamp()
    except ValueError:
        return False   # a death that can't be placed is not drawn at a guessed time
    where = f" (log line {crash.line})" if crash.line is not None else ""
    tl.mark(tl.t_of_wall(wall), "decisive line", f"{crash.cls}: {crash.summary}{where}", level)
    return True


def mark_log_verdict(tl: TimelineWriter, log_path: str | None, level: int) -> bool:
    """Without a crash record: the launch's local log classified as the monitor classifies it (the
    triage rules), its decisive line marked at the log's last write, when the server's end was written."""
    import os

    from console.servers.triage import classify_file

    if not log_path or not os.path.isfile(log_path):
        return False
    try:
        verdict = classify_file(log_path)
        wall = os.stat(log_path).st_mtime
    except (OSError, ValueError):
        return False
    if verdict.line is None:
        return False
    tl.mark(tl.t_of_wall(wall), "decisive line",
            f"{verdict.cls}: {verdict.summary or ''} (log line {verdict.line})".replace(":  (", ": ("), level)
    return True
