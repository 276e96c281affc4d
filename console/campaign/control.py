"""Starting, resuming, stopping and following campaigns: what the CLI and the Campaign tab both call.

A campaign runs as its own detached process (`gpudeck campaign _drive ID`), so
it outlives the console, the tmux pane and the SSH connection. This module
is the one place that spawns it, signals it (only a pid whose /proc command
line names the campaign), and reads its state for the screens.
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from . import state as st
from .runner import plan_cells
from .spec import load


class ControlError(Exception):
    """A campaign cannot be started, resumed or stopped; one line saying why."""


def create(profile_name: str, file: Path | str | None = None) -> st.CampaignState:
    """A new campaign from a file (default: the profile's campaign.toml), saved, not yet running."""
    path = Path(file) if file else st.campaign_file(profile_name)
    spec = load(path)                       # CampaignError names the file and key
    cells = plan_cells(spec)
    state = st.CampaignState(id=st.new_id(profile_name), profile=profile_name, spec=spec.to_json(), cells=cells)
    (state.dir / "campaign.toml").write_bytes(path.read_bytes())
    st.save(state)
    return state


def prepare_resume(profile_name: str, campaign_id: str) -> st.CampaignState:
    state = st.load(profile_name, campaign_id)
    if st.is_driver(state.driver_pid, state.id):
        raise ControlError(f"campaign {state.id} is running (driver pid {state.driver_pid}); nothing to resume")
    if state.status == "finished":
        raise ControlError(f"campaign {state.id} is finished; nothing to resume")
    for cell in state.cells:   # a cell a stop cut short is redone; one a kill cut short is found mid-way
        if cell.status == "interrupted":
            cell.status, cell.note = "queued", "redone after the campaign was stopped during it"
    st.save(state)
    return state


def check_lock(profile_name: str, campaign_id: str) -> None:
    """Refuse at once when another campaign drives this host, not later in the background."""
    try:
        st.acquire_lock(profile_name, campaign_id)
        st.release_lock(profile_name, campaign_id)
    except st.LockHeld as exc:
        raise ControlError(str(exc)) from None


def spawn(state: st.CampaignState) -> int:
    """Start the detached driver; returns its pid."""
    check_lock(state.profile, state.id)
    with open(state.dir / "driver.log", "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "console", "campaign", "_drive", state.id,
                                 "--profile", state.profile], stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                                start_new_session=True)
    state.driver_pid = proc.pid
    st.save(state)
    return proc.pid


def stop(profile_name: str, campaign_id: str) -> int:
    """Ask a running campaign to stop (it stops its server and saves); returns the driver's pid."""
    import os
    import signal

    state = st.load(profile_name, campaign_id)
    if not st.is_driver(state.driver_pid, state.id):
        raise ControlError(f"campaign {state.id} has no running driver (status {state.status})")
    os.kill(state.driver_pid, signal.SIGTERM)   # proven ours: its /proc command line names this campaign
    return state.driver_pid


def latest(profile_name: str) -> st.CampaignState | None:
    found, _bad = st.list_all(profile_name)
    return max(found, key=lambda s: s.created_at) if found else None


def view(state: st.CampaignState, now: float | None = None) -> dict:
    """What a screen shows besides the cells: is the driver alive, elapsed, an estimate of time left."""
    now = time.time() if now is None else now
    running = st.is_driver(state.driver_pid, state.id)
    finished = [c for c in state.cells if c.status in st.FINISHED and c.started_at and c.ended_at]
    left_cells = [c for c in state.cells if c.status not in st.FINISHED]
    per_cell = (sum(c.ended_at - c.started_at for c in finished) / len(finished)) if finished else None
    current = next((c for c in state.cells if c.status in st.IN_PROGRESS), None)
    left = None
    if per_cell is not None and left_cells:
        left = per_cell * len(left_cells)
        if current is not None and current.started_at:
            left = max(0.0, left - (now - current.started_at))
    end = state.finished_at if state.status != "running" and state.finished_at else now
    note = state.note
    if state.status == "running" and not running:
        note = "its driver is gone (killed or the machine rebooted): resume continues it"
    return {"running": running, "elapsed_s": max(0.0, end - state.created_at),
            "left_s": left if state.status == "running" and running else None,
            "current": current.name if current else None, "note": note}
