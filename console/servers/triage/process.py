"""The process's own word on how it ended, put above what its log says.

A log is what a server chose to print; how its process ended is a fact.
llama.cpp prints nothing when it segfaults, and vLLM prints an
EngineDeadError traceback while it stops in order, so the exit status and
whether anyone asked for the stop decide first:

  * a stop that gpudeck or the operator asked for is `stopped`, whatever
    noise the shutdown logged;
  * death by SIGSEGV, SIGABRT, SIGBUS, SIGILL or SIGFPE is `crashed` with a
    class named for the signal, unless the log's final run names a root
    cause (an illegal address before the SIGABRT, an OOM before the kill);
  * death by any other signal is `process-killed`;
  * a process alive whose /health answers has no dead engine: failures the
    log shows are failed requests (`request-error`);
  * an exit that failed, or a process that ended without a status, is
    never `healthy`, whatever the log showed.

The wrapper writes the shell's status (128+N for signal N); a negative
status (Python's `returncode`) is read as the same signal.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from .rules import CAUSES, CRASH_CLASSES
from .verdict import LIVENESS, PROCESS, TriageResult

# signal number -> (class, name)
SIGNAL_CLASSES = {
    4: ("illegal-instruction", "SIGILL"),
    6: ("abort", "SIGABRT"),
    7: ("bus-error", "SIGBUS"),
    8: ("fpe", "SIGFPE"),
    11: ("segfault", "SIGSEGV"),
}
SIGNAL_NAMES = {1: "SIGHUP", 2: "SIGINT", 3: "SIGQUIT", 9: "SIGKILL", 13: "SIGPIPE", 14: "SIGALRM",
                15: "SIGTERM", 24: "SIGXCPU", 25: "SIGXFSZ", 31: "SIGSYS"}


@dataclass(frozen=True)
class ProcessEvidence:
    """What is known of the server's process, beside its log; None where unknown."""

    exit_status: int | None = None
    stopped_by_operator: bool = False  # gpudeck or the operator asked for the stop (the launch record says)
    ended: bool = False  # the process is known to be gone (an exit status may still be missing)
    alive: bool | None = None  # liveness: the process (group) still runs
    health_ok: bool | None = None  # liveness: /health answered 200
    # the log shows the engine dying before any shutdown was asked for (servers.engine_death):
    # vLLM's API server then exits 0 by itself, and that 0 is no clean stop
    engine_died: bool = False
    death_line: str | None = None   # that log line, to name in the verdict
    # a scheduler's facts (a Slurm job): its end state (COMPLETED, FAILED, TIMEOUT, ...) and the class
    # only a scheduler can name (timeout, node-fail, out-of-memory, preempted, cancelled; slurm.ending)
    scheduler_state: str | None = None
    scheduler_class: str | None = None
    failed_where: str | None = None   # the rank and node a job failed on ("rank 1 on node2"), when known

    @property
    def known(self) -> bool:
        return (self.exit_status is not None or self.stopped_by_operator or self.ended
                or self.scheduler_state is not None)

    @property
    def liveness_known(self) -> bool:
        return self.alive is not None or self.health_ok is not None


def signal_of(status: int | None) -> int | None:
    """The signal that ended the process, from a shell status (128+N) or a returncode (-N)."""
    if status is None or isinstance(status, bool):
        return None
    if 128 < status < 128 + 65:
        return status - 128
    if -65 < status < 0:
        return -status
    return None


def signal_status(cls: str) -> int | None:
    """The shell status (128+N) of a death a class names (`segfault` -> 139); None for any other class:
    how a report that names the signal in words (srun's `Segmentation fault`) becomes process evidence."""
    number = next((n for n, (name, _) in SIGNAL_CLASSES.items() if name == cls), 9 if cls == "process-killed" else None)
    return 128 + number if number is not None else None


def signal_name(number: int) -> str:
    if number in SIGNAL_CLASSES:
        return SIGNAL_CLASSES[number][1]
    return SIGNAL_NAMES.get(number, f"signal {number}")


def judge(log: TriageResult, process: ProcessEvidence, tail: list[str] | None = None) -> TriageResult:
    """The verdict of `log` corrected by what the process showed; `tail` (the log's last
    lines) is the excerpt when the log has no line of its own to show."""
    sources = [PROCESS] if process.known else []
    if process.liveness_known:
        sources.append(LIVENESS)
    sources += [s for s in log.sources if s not in (PROCESS, LIVENESS)]
    result = replace(log, sources=sources, evidence=list(log.evidence))
    status = process.exit_status
    if status is not None:
        result.evidence.insert(0, f"exit status {status}")
    if process.failed_where is not None:
        result.evidence.insert(0, f"failed on {process.failed_where}")
    if process.scheduler_state is not None:
        result.evidence.insert(0, f"Slurm {process.scheduler_state}")
    if process.stopped_by_operator:
        return _stopped(result, status)
    if process.scheduler_class is not None:
        return _scheduled_out(result, process, tail)
    number = signal_of(status)
    if number is not None and status is not None:  # a signal is only read from a status
        return _signalled(result, number, status, tail)
    if status == 0 and process.engine_died:
        return _engine_died(result, process.death_line)
    if status == 0 and process.scheduler_state not in (None, "COMPLETED"):
        return _ended_badly(result, status, tail)   # Slurm's FAILED at status 0 is no clean end
    if status == 0:
        return _exited_cleanly(result)
    if status is not None or process.ended:
        return _ended_badly(result, status, tail)
    if process.alive and process.health_ok and result.cls == "engine-dead":
        # the engine answers /health: what the log took for its death were failed requests
        result.cls, result.state = "request-error", "serving" if result.ready_seen else "loading"
        result.summary = f"requests failed, but the server is alive and /health answers: {result.summary}"
        return result
    if process.alive is False and log.state in ("loading", "ready", "serving") and not log.crashed:
        result.state = "unknown"
        result.summary += "; the process is gone and left no exit status"
    return result


def process_only(process: ProcessEvidence) -> TriageResult:
    """The verdict of the process's facts alone, with no log read: what an ended launch's record
    state and a Slurm job's end class follow, so both read an exit the way `judge` does."""
    silent = TriageResult(cls="unknown", line=None, summary="the log was not read", excerpt=[], server="unknown",
                          ready_seen=False)
    return judge(silent, process)


def _stopped(result: TriageResult, status: int | None) -> TriageResult:
    before = f" (the log shows {result.cls} at line {result.line})" if result.crashed else ""
    result.cls = "healthy" if result.ready_seen else "unknown"
    result.state = "stopped"
    how = f", exit status {status}" if status is not None else ""
    result.summary = f"stopped on request{how}{before}"
    return result


def _signalled(result: TriageResult, number: int, status: int, tail: list[str] | None) -> TriageResult:
    name = signal_name(number)
    died = f"the process died by {name} (exit status {status})"
    if result.crashed and result.cls in CAUSES:
        result.state = "crashed"
        result.summary = f"{result.summary}; then {died}"
        return result
    cls = SIGNAL_CLASSES[number][0] if number in SIGNAL_CLASSES else "process-killed"
    if result.crashed and result.line is not None and result.cls == cls:
        # the log names the same death ("Segmentation fault"): say it once, and where the log says it
        result.summary = f"{died}, as the log says at line {result.line}"
    elif result.crashed and result.line is not None:
        result.summary = f"{died}; the log's last failure: {result.summary}"
    else:
        result.summary = died
        result.line = None
        result.excerpt = list(tail or [])
    result.cls, result.state = cls, "crashed"
    return result


def _scheduled_out(result: TriageResult, process: ProcessEvidence, tail: list[str] | None) -> TriageResult:
    """The scheduler ended the job (a time limit, a failed node, its memory limit, a preemption, a
    cancel by someone else): its word names the class; nothing the log says overrides a TIMEOUT."""
    cls = process.scheduler_class or "unknown"
    logged = f"; the log's last failure: {result.summary}" if result.crashed else ""
    result.cls, result.state = cls, "crashed"
    result.summary = f"Slurm ended the job ({process.scheduler_state}: {cls}){logged}"
    if result.line is None and tail:
        result.excerpt = list(tail)
    return result


def _exited_cleanly(result: TriageResult) -> TriageResult:
    """Exit 0: the process ended as it meant to; the consequences of a shutdown are noise,
    a root cause the log names stays."""
    if result.crashed and result.cls in CAUSES:
        return result
    result.cls = "healthy" if result.ready_seen else "unknown"
    result.state = "stopped"
    result.summary = "the process exited with status 0" + (" after serving" if result.ready_seen else
                                                           " before it was ready")
    return result


def _engine_died(result: TriageResult, line: str | None = None) -> TriageResult:
    """Exit 0 after an engine death nobody asked for: a crash, named by the log's cause when it has one."""
    result.state = "crashed"
    if result.cls not in CRASH_CLASSES:
        result.cls = "engine-dead"
    if line:
        result.evidence.insert(0, f"engine death: {line}")
    said = f" ({line})" if line else ""
    result.summary = f"the engine died before any stop was asked for{said}, then the server exited 0: {result.summary}"
    return result


def _ended_badly(result: TriageResult, status: int | None, tail: list[str] | None) -> TriageResult:
    """A failed exit status, or a process gone without one: never healthy."""
    result.state = "crashed"
    how = f"exited with status {status}" if status is not None else "ended without an exit status"
    if result.cls in CRASH_CLASSES:
        return result
    result.cls = "unknown"
    result.summary = f"the process {how}; the log shows no cause"
    if result.line is None and tail:
        result.excerpt = list(tail)
    return result
