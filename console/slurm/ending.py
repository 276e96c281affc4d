"""How a job ended, as process evidence for the verdict: Slurm's word comes before the log's.

`job_end(state, exit code, cancelled by us)` returns the same facts a local
launch's wrapper gives (the exit status in shell form, 128+N for a signal;
the signal; whether gpudeck asked for the stop), plus the classes only a
scheduler can name:

  CANCELLED, gpudeck asked        -> stopped (not a crash)
  CANCELLED, nobody here asked    -> cancelled (someone else's scancel, an admin)
  FAILED with signal 11 / 139     -> segfault (and SIGABRT -> abort, ...; the triage verdict's classes)
  FAILED otherwise                -> exit-nonzero
  any end after our scancel       -> stopped (a stop asked for is never a crash, as for a local launch)
  TIMEOUT / DEADLINE              -> timeout (the job's --time ran out)
  NODE_FAIL / BOOT_FAIL           -> node-fail
  OUT_OF_MEMORY                   -> out-of-memory (the job's memory limit)
  PREEMPTED                       -> preempted
  COMPLETED                       -> exited 0, no class
"""
from __future__ import annotations

from dataclasses import asdict, dataclass

from .jobs import LIVE_STATES

_SCHEDULER_CLASSES = {"TIMEOUT": "timeout", "DEADLINE": "timeout", "NODE_FAIL": "node-fail",
                      "BOOT_FAIL": "node-fail", "OUT_OF_MEMORY": "out-of-memory", "PREEMPTED": "preempted"}
_SUMMARY = {"timeout": "the job ran past its time limit (Slurm TIMEOUT)",
            "node-fail": "a node of the job failed (Slurm {state})",
            "out-of-memory": "the job went over its memory limit (Slurm OUT_OF_MEMORY)",
            "preempted": "the job was preempted by the scheduler (Slurm PREEMPTED)"}


@dataclass(frozen=True)
class JobEnd:
    """A finished job's facts; `cls` None means it ended cleanly."""

    state: str
    exit_status: int | None  # shell form: the exit code, or 128+N for signal N
    signal: int | None
    stopped_by_us: bool
    cls: str | None
    summary: str

    @property
    def crashed(self) -> bool:
        return self.cls is not None and self.cls != "stopped"

    def process_facts(self) -> dict:
        """The facts the triage verdict takes first (exit status, stopped by the operator, ended)."""
        return {"exit_status": self.exit_status, "stopped_by_operator": self.stopped_by_us, "ended": True}

    def to_json(self) -> dict:
        return asdict(self) | {"crashed": self.crashed}


def job_end(state: str, status: int | None, signal: int | None, cancelled_by_us: bool) -> JobEnd | None:
    """The verdict facts of a job in `state` with `ExitCode=status:signal`; None while it is live.

    Only what a scheduler alone can name is decided here (a cancel by someone else, a time limit, a
    node failure, a memory limit, a preemption); how the process itself ended (a signal, a failed
    exit, a stop we asked for) is the triage verdict's (`triage.process.judge`), as for a local launch.
    """
    from ..servers.triage.process import ProcessEvidence, process_only, signal_of

    state = (state or "UNKNOWN").upper()
    if state in LIVE_STATES:
        return None
    shell = 128 + signal if signal else status
    sig = signal_of(shell)
    if state == "CANCELLED" and not cancelled_by_us:
        return JobEnd(state, shell, sig, False, "cancelled", "the job was cancelled outside gpudeck (scancel)")
    if state in _SCHEDULER_CLASSES:
        cls = _SCHEDULER_CLASSES[state]
        return JobEnd(state, shell, sig, False, cls, _SUMMARY[cls].format(state=state))
    if state == "COMPLETED" and not status and not signal:
        return JobEnd(state, 0, None, cancelled_by_us, None, "the job exited with status 0")
    end = JobEnd(state, shell, sig, cancelled_by_us, None, "")
    verdict = process_only(ProcessEvidence(**end.process_facts()))
    if verdict.state != "crashed":   # a stop we asked for (scancel by gpudeck); Slurm's FAILED at 0 is no clean end
        if cancelled_by_us:
            return JobEnd(state, shell, sig, True, "stopped", "stopped on request (scancel by gpudeck)")
        return JobEnd(state, shell, None, False, "exit-nonzero", f"the job failed with status {status} (Slurm {state})")
    if sig is not None:
        return JobEnd(state, shell, sig, False, verdict.cls,   # a signal class, or process-killed
                      f"the job {'died' if verdict.cls != 'process-killed' else 'was killed'} by signal {sig} "
                      f"(ExitCode {status}:{signal})")
    return JobEnd(state, shell, None, False, "exit-nonzero", f"the job exited with status {status} (Slurm {state})")
