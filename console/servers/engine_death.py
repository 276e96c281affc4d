"""An engine that died on its own, though the server's process then exits 0.

vLLM's API server outlives its EngineCore (or the EngineCore's worker) by a
second or two and then exits with status 0, the status of a clean stop. Its log
tells the two apart: a death is logged with no shutdown asked for before it
("Worker proc VllmWorker-0 died unexpectedly", "engine core exited
unexpectedly"); a stop logs the request first (a signal received, "shutdown
triggered") and only then the engine going away.
"""
from __future__ import annotations

import re

from ..hosts import Host, HostError
from ..store.launches import LaunchRecord

DEATH = re.compile(r"engine core exited unexpectedly|[Ee]ngine core proc \S+ died unexpectedly"
                   r"|[Ww]orker proc \S+ died unexpectedly|EngineCore encountered a fatal error")
ASKED = re.compile(r"\[shutdown\] API server: shutdown triggered|\[shutdown\] EngineCore: trigger received signal"
                   r"|[Ss]hutting down FastAPI HTTP server")
TAIL_BYTES = 2_000_000


def death_line(text: str) -> str | None:
    """The first line saying the engine died, when no shutdown was asked for before it."""
    for line in text.splitlines():
        if ASKED.search(line):
            return None
        if DEATH.search(line):
            return line.strip()
    return None


async def recheck_clean_exit(host: Host, record: LaunchRecord) -> bool:
    """A launch that ended with status 0, unasked: if its log shows the engine died first,
    mark it crashed (its class comes from triage). True when it changed."""
    if record.state != "stopped" or record.exit_status != 0 or record.kill_requested or not record.log:
        return False
    try:
        result = await host.run(["tail", "-c", str(TAIL_BYTES), "--", record.log], timeout=30)
    except HostError:
        return False
    if not result.ok or death_line(result.stdout) is None:
        return False
    record.state = "crashed"
    return True
