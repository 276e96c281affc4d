"""An engine that died on its own, though the server's process then exits 0.

vLLM's API server outlives its EngineCore (or the EngineCore's worker) by a
second or two and then exits with status 0, the status of a clean stop. Its log
tells the two apart: a death is logged with no shutdown asked for before it
("Worker proc VllmWorker-0 died unexpectedly", "engine core exited
unexpectedly"); a stop logs the request first (a signal received, "shutdown
triggered") and only then the engine going away.

What that means for the launch is not decided here: the death is one fact of
the process evidence (`triage.process.ProcessEvidence.engine_died`), and an
ended record's state is the state of the process verdict (`ended_state`).
"""
from __future__ import annotations

import re
from typing import TYPE_CHECKING

from ..hosts import Host, HostError
from ..store.launches import LaunchRecord

if TYPE_CHECKING:
    from .triage.process import ProcessEvidence

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


def evidence(record: LaunchRecord, log_text: str | None = None) -> ProcessEvidence:
    """The process's side of a launch's verdict: its exit status, whether a stop was asked for,
    whether it has ended, and (when its log is given) whether the engine died unasked."""
    from .triage.process import ProcessEvidence

    line = death_line(log_text) if log_text else None
    return ProcessEvidence(exit_status=record.exit_status, stopped_by_operator=record.kill_requested,
                           ended=not record.live, engine_died=line is not None, death_line=line)


def ended_state(record: LaunchRecord, log_text: str | None = None) -> str:
    """`crashed` or `stopped` for a launch whose process has ended: the state the process verdict
    (`triage.process.judge` on `evidence`, no log classes) gives, so the record and its crash
    record never read one exit two ways."""
    from dataclasses import replace

    from .triage.process import process_only

    facts = replace(evidence(record, log_text), ended=True)
    return "crashed" if process_only(facts).state == "crashed" else "stopped"


async def recheck_clean_exit(host: Host, record: LaunchRecord) -> bool:
    """A launch that ended with status 0, unasked: its state again, with its log's word on the
    engine (only such an exit can hide a death). True when it changed."""
    if record.state != "stopped" or record.exit_status != 0 or record.kill_requested or not record.log:
        return False
    try:
        result = await host.run(["tail", "-c", str(TAIL_BYTES), "--", record.log], timeout=30)
    except HostError:
        return False
    if not result.ok:
        return False
    from . import launch_state

    line = death_line(result.stdout)
    return line is not None and launch_state.apply(record, launch_state.EngineDied(line))
