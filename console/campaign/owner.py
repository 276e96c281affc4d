"""The one owner of a campaign's state: its driver, its ending, its progress and its time left.

Every view (the Campaign tab's header, `campaign show` and `list`, the
report, the demo's quit question) reads a campaign through `read`, and
nothing else decides whether its driver runs, how far it has come or how
long it has left. The writes are here too, each in one function:

- `begin`      the driver starts work: running, with its lanes;
- `conclude`   the one writer of the ending (finished / stopped / failed),
               from what ended the run; a stop marks the cell it cut short
               interrupted;
- `refuse`     a driver refused its hosts before any cell ran: failed;
- `claim_driver` / `driver_spawned`  who the driver is (pid, start time,
               token: proven as `driver.is_driver` proves it).

A driver is shown running only while the process is alive, proven ours and
the campaign says running (or it has just been spawned to resume one).
Once it has written the ending and is still finishing up, it reads
`closing`; once it has exited it is not shown at all (a zombie is not
alive: `pids.pid_alive`), and the process that spawned it reaps it
(`control.spawn`).
"""
from __future__ import annotations

import os
import socket
import time
from dataclasses import dataclass
from typing import Any, Callable

from ..fmt import duration
from ..store import campaigns as st
from . import driver
from .time_left import TimeLeft, ended_without_a_round, estimate, visits_left

ENDINGS = ("finished", "stopped", "failed")
STOPPED_NOTE = "stopped by the operator"

# what the driver is doing, as the views say it
RUNNING = "running"        # alive, ours, working
CLOSING = "closing"        # alive, the ending written: it is finishing up and exits next
GONE = "gone"              # the campaign says running, but no driver of it is alive
ENDED = "ended"            # the campaign has ended and its driver with it


class CampaignStopped(Exception):
    """The operator stopped the campaign (`campaign stop`, SIGTERM, `x` in the Campaign tab)."""


# ---------------------------------------------------------------- the writers

def begin(state: st.CampaignState, lanes: int = 1) -> None:
    """The driver starts work (or takes it up again): running, no ending, `lanes` cells at a time."""
    state.status, state.note, state.finished_at = "running", "", None
    state.lanes = max(1, lanes)
    st.save(state)


def ending_of(error: BaseException | None) -> tuple[str, str] | None:
    """What ended a run, as (status, note); None for an abort that is no ending (the process was
    cancelled or interrupted hard: it stays running, its driver gone, and resume continues it),
    or for a refusal (another campaign holds a host: `refuse` decides)."""
    from .lock import LockHeld
    from .spec import CampaignError

    if error is None:
        return "finished", ""
    if isinstance(error, CampaignStopped):
        return "stopped", STOPPED_NOTE
    if isinstance(error, CampaignError):
        return "failed", str(error)
    if isinstance(error, LockHeld):
        return None
    if isinstance(error, Exception):
        return "failed", f"{type(error).__name__}: {error}"
    return None


def conclude(state: st.CampaignState, error: BaseException | None = None,
             log: Callable[[str], None] | None = None, note: str | None = None) -> None:
    """The one writer of a campaign's ending, from what ended its run (None: every cell ran).
    Saved even when the disk is full enough to refuse: that is said, never raised, so the lock is
    still released and the host closed after it."""
    ending = ending_of(error)
    if ending is not None:
        status, why = ending
        state.status, state.note = status, note if note is not None else why
        if status == "stopped":
            for cell in state.cells:
                if cell.status in st.IN_PROGRESS:
                    cell.status, cell.note = "interrupted", "campaign stopped during this cell"
        if status == "failed" and log is not None:
            log(f"campaign failed: {state.note}")
    state.finished_at = time.time()
    try:
        st.save(state)
    except (OSError, ValueError) as exc:
        if log is not None:
            log(f"could not save the campaign's state: {exc}")


def refuse(state: st.CampaignState, why: str) -> None:
    """A driver refused its hosts (another campaign holds one): a campaign that never ran says so,
    not 'running' with its driver gone. One that ran before keeps its state for a later resume."""
    if state.status == "running" and not any(c.status != "queued" or c.rounds for c in state.cells):
        state.status, state.note, state.finished_at = "failed", f"refused: {why}"[:400], time.time()
        try:
            st.save(state)
        except (OSError, ValueError):
            pass


def claim_driver(state: st.CampaignState) -> None:
    """This process drives the campaign now (the detached driver, or a foreground run)."""
    pid = os.getpid()
    state.driver_pid, state.driver_host = pid, socket.gethostname()
    state.driver_start, state.driver_token = driver.start_ticks(pid), driver.own_token()


def driver_spawned(state: st.CampaignState, pid: int, token: str) -> None:
    """A detached driver was just spawned for the campaign: who it is, proven later by pid, start
    time and token. A campaign that ended before (a resume) has no ending until it ends again."""
    state.driver_pid, state.driver_start, state.driver_token = pid, driver.start_ticks(pid), token
    state.finished_at = None
    st.save(state)


# ---------------------------------------------------------------- the reading

def driver_alive(state: st.CampaignState) -> bool:
    """Is the campaign's driver alive and proven ours (pid, start time, token)? A zombie is not."""
    return driver.is_driver(state.driver_pid, state.driver_start, state.driver_token)


@dataclass(frozen=True)
class Progress:
    cells_done: int
    cells: int
    runs_done: int       # visits that ended: each repeat, and the attempt that ended a cell without one
    runs_left: int       # visits still owed by the cells not yet ended
    runs_asked: int      # cells x repeats, as the campaign file asked
    repeats: int

    @property
    def runs_planned(self) -> int:
        return self.runs_done + self.runs_left

    @property
    def fraction(self) -> float | None:
        return self.runs_done / self.runs_planned if self.runs_planned else None

    def text(self) -> str:
        """`3/5 cells · 7/13 runs (3 repeats; 2 of 15 dropped)`: a crashed, pruned or skipped config
        owes no more runs, so the runs planned can be fewer than asked."""
        dropped = self.runs_asked - self.runs_planned
        return (f"{self.cells_done}/{self.cells} cells · {self.runs_done}/{self.runs_planned} runs "
                f"({self.repeats} repeat{'s' if self.repeats != 1 else ''}"
                + (f"; {dropped} of {self.runs_asked} dropped)" if dropped > 0 else ")"))

    def to_json(self) -> dict[str, Any]:
        return {"cells_done": self.cells_done, "cells": self.cells, "runs_done": self.runs_done,
                "runs_left": self.runs_left, "runs_planned": self.runs_planned, "runs_asked": self.runs_asked,
                "repeats": self.repeats}


@dataclass(frozen=True)
class Reading:
    """A campaign as every view shows it."""

    id: str
    status: str
    driver: str                  # RUNNING / CLOSING / GONE / ENDED
    driver_pid: int | None
    progress: Progress
    elapsed_s: float
    time_left: TimeLeft | None   # only while the driver runs, and once a visit has been measured
    current: str | None          # the cell in progress
    note: str

    @property
    def driving(self) -> bool:
        """The driver runs the campaign (the views' `● driver running`)."""
        return self.driver == RUNNING

    @property
    def alive(self) -> bool:
        """A driver process of the campaign still exists (running, or closing after its ending)."""
        return self.driver in (RUNNING, CLOSING)

    def driver_text(self, mark: bool = True) -> str:
        """`● driver running`, `driver closing`, `driver gone: resume continues it`, or nothing once ended."""
        words = {RUNNING: "driver running", CLOSING: "driver closing",
                 GONE: "driver gone: resume continues it"}.get(self.driver, "")
        return f"● {words}" if mark and self.driver == RUNNING else words

    def left_text(self) -> str:
        """The time left with its range, or why there is none while the campaign runs."""
        if self.time_left is not None:
            return self.time_left.text()
        if self.driving:
            return "time left unknown until a visit ends"
        return ""

    def line(self, profile: str | None = None) -> str:
        """One line: id, status, driver, progress, elapsed, time left, note (the report's and
        `campaign show`'s first line)."""
        parts = [self.id] + ([f"profile {profile}"] if profile else []) + [self.status]
        if self.driver_text():
            parts.append(self.driver_text())
        parts += [self.progress.text(), f"elapsed {duration(self.elapsed_s)}"]
        if self.left_text():
            parts.append(self.left_text())
        if self.note:
            parts.append(self.note)
        return " · ".join(parts)

    def to_json(self) -> dict[str, Any]:
        return {"status": self.status, "driver": self.driver, "driver_running": self.driving,
                "driver_pid": self.driver_pid, "progress": self.progress.to_json(),
                "elapsed_s": self.elapsed_s, "left_s": self.time_left.seconds if self.time_left else None,
                "time_left": self.time_left.to_json() if self.time_left else None,
                "current": self.current, "note": self.note}


def repeats_of(state: st.CampaignState) -> int:
    repeats = (state.spec.get("sweep") or {}).get("repeats") or 1
    return repeats if isinstance(repeats, int) and not isinstance(repeats, bool) and repeats > 0 else 1


def progress(state: st.CampaignState) -> Progress:
    repeats = repeats_of(state)
    done = sum(len(c.rounds) + ended_without_a_round(c) for c in state.cells)
    left = sum(visits_left(c, repeats) for c in state.cells)
    return Progress(state.finished_cells, len(state.cells), done, left, len(state.cells) * repeats, repeats)


def _driver(state: st.CampaignState, alive: bool) -> str:
    if state.status == "running":
        return RUNNING if alive else GONE
    if alive:   # ended: its driver is closing, unless one was spawned since to resume it
        return CLOSING if state.finished_at is not None else RUNNING
    return ENDED


def read(state: st.CampaignState, now: float | None = None, alive: bool | None = None) -> Reading:
    """The campaign as every view shows it; `alive` is the driver's liveness when already proven."""
    now = time.time() if now is None else now
    alive = driver_alive(state) if alive is None else alive
    phase = _driver(state, alive)
    end = state.finished_at if state.status != "running" and state.finished_at else now
    current = next((c for c in state.cells if c.status in st.IN_PROGRESS), None)
    note = state.note
    if phase == GONE:
        note = "its driver is gone (killed or the machine rebooted): resume continues it"
    left = estimate(state, now, repeats_of(state), state.lanes or 1) if phase == RUNNING \
        and state.status == "running" else None
    return Reading(id=state.id, status=state.status, driver=phase,
                   driver_pid=state.driver_pid if alive else None, progress=progress(state),
                   elapsed_s=max(0.0, end - state.created_at), time_left=left,
                   current=current.name if current else None, note=note)
