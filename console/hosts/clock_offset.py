"""How far a host's clock is from this one's: one `date +%s.%N` over the host's connection, timed here.

The remote clock is read somewhere between the command's send and its
answer, so with `mid` the midpoint of the two local readings the offset is
`remote - mid`, and it is off by at most half the round trip (`error_s`):
a bound, not a guess. The best of a few tries (the smallest error) is kept.
A reading that is not a number, or a host that does not answer, gives no
offset, with the reason: a remote time is then not placed on this clock.
"""
from __future__ import annotations

import math
import time
from dataclasses import dataclass
from typing import Sequence

from .base import Host, HostError

DATE = ("date", "+%s.%N")
TRIES = 3


@dataclass(frozen=True)
class ClockOffset:
    host: str
    offset_s: float | None      # remote wall clock minus this one's; None when not measured
    error_s: float | None       # at most this far off (half the best round trip)
    why: str = ""               # why there is no offset

    def to_json(self) -> dict:
        return {"host": self.host, "offset_s": self.offset_s, "error_s": self.error_s,
                "method": f"{' '.join(DATE)} round trip, best of {TRIES}", **({"why": self.why} if self.why else {})}

    def line(self) -> str:
        if self.offset_s is None:
            return f"{self.host} clock offset unknown ({self.why})"
        return f"{self.host} clock {self.offset_s:+.3f} s ± {self.error_s * 1000:.0f} ms"


async def measure(host: Host, command: Sequence[str] = DATE, tries: int = TRIES,
                  timeout_s: float = 5.0) -> ClockOffset:
    best: tuple[float, float] | None = None
    why = ""
    for _ in range(tries):
        sent = time.time()
        try:
            result = await host.run(list(command), timeout=timeout_s)
        except HostError as exc:
            why = str(exc)[:200]
            break
        answered = time.time()
        try:
            remote = float(result.stdout.strip().splitlines()[-1]) if result.ok else None
        except (ValueError, IndexError):
            remote = None
        if remote is None or not math.isfinite(remote):
            why = f"{' '.join(command)} gave no time (status {result.returncode})"
            continue
        error = (answered - sent) / 2
        if best is None or error < best[1]:
            best = (remote - (sent + answered) / 2, error)
    if best is None:
        return ClockOffset(host.name, None, None, why or "no answer")
    return ClockOffset(host.name, round(best[0], 6), round(best[1], 6))
