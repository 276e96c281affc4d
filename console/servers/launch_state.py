"""The one owner of a launch's state: every change of it is an event with evidence, checked here.

A launch record's `state`, `crash_class`, `exit_status` and `stopped_at` (its
end time) are set by this module alone, and it alone saves a launch record
(`console.store.launches.save` / `create`); the AST gate in
tests/test_launch_state_owner.py holds every other module to that. Callers
say what they saw (`Started`, `Ready`, `StopAsked`, `Ended`, ...) and the
owner decides what it means for the record, using the same process verdict
(`triage.process.judge`) for every backend, so an exit is never read two ways.

An event the current state does not allow (a `stopped` record that hears
`Ready`) is refused: the record is left as it is and the refusal logged.
The table of who may change what is in console/README.md ("A launch's states").
"""
from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any, Callable, Union

from ..store import launches
from ..store.launches import LaunchRecord, LaunchState

if TYPE_CHECKING:
    from .triage import TriageResult

log = logging.getLogger(__name__)

S = LaunchState
LIVE = frozenset(launches.LIVE_STATES)
ANY = frozenset(LaunchState)


@dataclass(frozen=True)
class Started:
    """The server's process group is known, or the scheduler runs the job: it loads."""
    how: str


@dataclass(frozen=True)
class StartFailed:
    """The launch never got a server going (the wrapper did not start, sbatch refused)."""
    why: str


@dataclass(frozen=True)
class Requeued:
    """The scheduler requeued a running job: it starts over, elsewhere."""
    restarts: int


@dataclass(frozen=True)
class Ready:
    """The server answers: its log said so, /health answered, or every rank said ready."""
    how: str


@dataclass(frozen=True)
class StopAsked:
    """Someone asked for the stop (the console, the CLI, a campaign): an end after it is no crash."""
    by: str


@dataclass(frozen=True)
class StopRefused:
    """A stop asked for could not be sent: the launch goes on as it was."""
    why: str


@dataclass(frozen=True)
class StopSeenElsewhere:
    """Another process saved a stop of this launch after this copy was read: its word is kept."""
    saved: LaunchRecord


@dataclass(frozen=True)
class Ended:
    """The process (or job) is gone; how it went is weighed by `triage.process.judge`.

    `scheduler_state` / `scheduler_class` are Slurm's end state and the class only a scheduler can
    name (timeout, node-fail, out-of-memory, preempted, cancelled); `engine_died` is the log's
    engine-death line, when one was seen before any stop; `still_alive` a stop whose processes did
    not go (unkillable for now): it is stopped on our side, its survivors are reported."""
    exit_status: int | None
    how: str = "the process ended"
    engine_died: str | None = None
    scheduler_state: str | None = None
    scheduler_class: str | None = None
    stopped_by_us: bool | None = None
    still_alive: bool = False


@dataclass(frozen=True)
class EngineDied:
    """A launch read as stopped (exit 0, unasked) whose log shows its engine died first."""
    line: str


@dataclass(frozen=True)
class CrashFound:
    """A crash was judged (from the log, a hang, the job's end): its class and crash record."""
    cls: str
    crash_record: str | None = None


Event = Union[Started, StartFailed, Requeued, Ready, StopAsked, StopRefused, StopSeenElsewhere, Ended,
              EngineDied, CrashFound]

# event -> the states it may arrive in; anything else is refused and logged
ALLOWED: dict[type, frozenset[LaunchState]] = {
    Started: frozenset({S.LAUNCHING, S.LOADING, S.READY}),
    StartFailed: frozenset({S.LAUNCHING}),
    Requeued: frozenset({S.LOADING, S.READY, S.LAUNCHING}),
    Ready: frozenset({S.LOADING}),
    StopAsked: LIVE,
    StopRefused: frozenset({S.STOPPING}),
    StopSeenElsewhere: LIVE,
    Ended: LIVE,
    EngineDied: frozenset({S.STOPPED}),
    CrashFound: ANY,
}


class Refused(Exception):
    """An event the record's state does not allow (only raised by `require`)."""


def allowed(record: LaunchRecord, event: Event) -> bool:
    return record.state in ALLOWED[type(event)]


def apply(record: LaunchRecord, event: Event) -> bool:
    """Move `record` by `event` (in memory). True when the record changed; an event its state does
    not allow changes nothing and is logged with its evidence."""
    if not allowed(record, event):
        log.warning("launch %s: %s refused in state %s (%s)", record.id, type(event).__name__,
                    record.state, event)
        return False
    before = (record.state, record.crash_class, record.exit_status, record.stopped_at, record.ready_at,
              record.kill_requested, record.crash_record)
    _APPLY[type(event)](record, event)
    return before != (record.state, record.crash_class, record.exit_status, record.stopped_at, record.ready_at,
                      record.kill_requested, record.crash_record)


def move(profile: str, record: LaunchRecord, event: Event) -> bool:
    """`apply`, then save the record when it changed. True when it changed."""
    changed = apply(record, event)
    if changed:
        save(profile, record)
    return changed


def save(profile: str, record: LaunchRecord) -> None:
    """The one place a launch record is written (its other facts too: flags seen, survivors, the
    Slurm and outage notes): the state in it is always one a transition made."""
    launches.save(profile, record)


def create(profile: str, base_id: str, make: Callable[[str], LaunchRecord]) -> LaunchRecord:
    """A new launch's first save (`launching`, or `loading` for an adopted server)."""
    return launches.create(profile, base_id, make)


def adopt(profile: str, record: LaunchRecord) -> LaunchRecord:
    """A server gpudeck did not start, taken over while it runs: its first save, `loading`."""
    record.state = S.LOADING
    launches.save(profile, record)
    return record


def verdict_of_end(record: LaunchRecord, event: Ended) -> TriageResult:
    """The process verdict (no log classes) for an end: what decides `stopped` or `crashed`."""
    from .triage.process import ProcessEvidence, process_only

    asked = record.kill_requested if event.stopped_by_us is None else event.stopped_by_us
    return process_only(ProcessEvidence(exit_status=event.exit_status, stopped_by_operator=asked, ended=True,
                                        engine_died=event.engine_died is not None,
                                        scheduler_state=event.scheduler_state,
                                        scheduler_class=event.scheduler_class))


def _started(record: LaunchRecord, event: Started) -> None:
    if record.state == S.LAUNCHING:
        record.state = S.LOADING


def _start_failed(record: LaunchRecord, event: StartFailed) -> None:
    record.state = S.CRASHED
    record.stopped_at = record.stopped_at or time.time()


def _requeued(record: LaunchRecord, event: Requeued) -> None:
    record.state, record.ready_at = S.LAUNCHING, None


def _ready(record: LaunchRecord, event: Ready) -> None:
    record.state = S.READY
    record.ready_at = time.time()


def _stop_asked(record: LaunchRecord, event: StopAsked) -> None:
    record.kill_requested = True
    record.state = S.STOPPING


def _stop_refused(record: LaunchRecord, event: StopRefused) -> None:
    record.kill_requested = False
    record.state = S.READY if record.ready_at else S.LOADING


def _stop_seen(record: LaunchRecord, event: StopSeenElsewhere) -> None:
    record.kill_requested = True
    saved = event.saved
    record.state = saved.state
    if not saved.live:   # that stop has already ended it: its end facts come with it
        record.exit_status, record.stopped_at = saved.exit_status, saved.stopped_at
        record.crash_class = record.crash_class or saved.crash_class
        record.crash_record = record.crash_record or saved.crash_record
        if record.state == S.STOPPED and _a_crash(record.crash_class):
            record.state = S.CRASHED   # a crash this copy judged before that stop is how it ended


def _ended(record: LaunchRecord, event: Ended) -> None:
    record.exit_status = event.exit_status
    record.stopped_at = record.stopped_at or time.time()
    crashed = verdict_of_end(record, event).state == "crashed"
    # a crash judged while it ran (a fatal line, a hang) is how it ended, even if the stop was ours
    record.state = S.CRASHED if crashed or _a_crash(record.crash_class) else S.STOPPED


def _a_crash(cls: str | None) -> bool:
    from .triage import CRASH_CLASSES

    return cls in CRASH_CLASSES


def _engine_died(record: LaunchRecord, event: EngineDied) -> None:
    if record.exit_status == 0 and not record.kill_requested:
        record.state = S.CRASHED


def _crash_found(record: LaunchRecord, event: CrashFound) -> None:
    from ..store.crashes import crash_class

    record.crash_class = crash_class(event.cls)
    if event.crash_record:
        record.crash_record = event.crash_record
    if record.state == S.STOPPED and _a_crash(record.crash_class):
        record.state = S.CRASHED   # the log (or a hang) shows a crash came before the end, ours or not


_APPLY: dict[type, Callable[[LaunchRecord, Any], None]] = {
    Started: _started, StartFailed: _start_failed, Requeued: _requeued, Ready: _ready, StopAsked: _stop_asked,
    StopRefused: _stop_refused, StopSeenElsewhere: _stop_seen, Ended: _ended, EngineDied: _engine_died,
    CrashFound: _crash_found,
}


def copy(record: LaunchRecord) -> LaunchRecord:
    """A detached copy (for a view or a test that must not move the live record)."""
    return replace(record, flags=dict(record.flags), escaped=list(record.escaped))


# ---------------------------------------------------------------- the reading every view shows


@dataclass(frozen=True)
class Reading:
    """How the owner reads a saved launch: the state every view shows and, for a crash, its class."""

    state: str                 # `LaunchRecord.shown_state`: a live launch judged dead reads crashed
    crash_class: str | None    # the class the owner took in (CrashFound, EngineDied), when it reads crashed

    @property
    def crashed(self) -> bool:
        return self.state == "crashed"


def read(record: LaunchRecord) -> Reading:
    """The owner's reading of a launch; views (the Server tab, `server status`, the report, the task
    board's crash suggestions) take this and never weigh the record's fields themselves."""
    shown = record.shown_state
    return Reading(shown, record.crash_class if shown == "crashed" else None)
