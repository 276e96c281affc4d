"""Starting, resuming, stopping and following campaigns: what the CLI and the Campaign tab both call.

A campaign runs as its own detached process (`gpudeck campaign _drive ID`), so
it outlives the console, the tmux pane and the SSH connection. This module
is the one place that spawns it and signals it (only a driver proven by its
pid, start time and spawn token: `driver`); how a campaign reads (its driver,
progress and time left) is its owner's to say (`owner.read`).
The host lock is checked before anything is created, so a refused start
leaves no campaign behind.
"""
from __future__ import annotations

import asyncio
import os
import subprocess
import sys
import threading
from pathlib import Path

from profiles.atomic import write_atomic

from .. import limits
from . import driver, owner
from . import lock as locks
from ..store import campaigns as st
from ..store.files import FileRefused, read_capped
from .runner import plan_cells
from .spec import CampaignError, check_dataset, from_dict, load


class ControlError(Exception):
    """A campaign cannot be started, resumed or stopped; one line saying why."""


def check_lock(profile_name: str, spec: dict, campaign_id: str | None = None) -> None:
    """Refuse at once when another campaign drives this host and port, not later in the background;
    with `[policy] hosts`, every host's, and two of its profiles reaching one server."""
    from profiles import store
    from profiles.profile import ProfileError

    from ..hosts import HostError
    from .endpoints import clash

    hosts = list(((spec or {}).get("policy") or {}).get("hosts") or [])
    try:
        lanes = [store.load(name) for name in hosts]
        known: dict[str, str] = {}
        for profile in [store.load(profile_name), *(p for p in lanes if p.name != profile_name)]:
            identity = known[profile.name] = locks.local_identity() if profile.transport != "ssh" else \
                asyncio.run(locks.host_identity(profile))
            locks.check_free(identity, locks.lock_port(profile, spec), profile.name, campaign_id)
        refused = asyncio.run(clash(lanes, spec, known)) if lanes else None
    except locks.LockHeld as exc:
        raise ControlError(str(exc)) from None
    except (ProfileError, ValueError) as exc:
        raise ControlError(f"cannot load a profile of the campaign: {exc}") from None
    except HostError as exc:
        raise ControlError(f"cannot tell which machine a profile of the campaign is (for the campaign lock): "
                           f"{exc}") from None
    if refused:
        raise ControlError(refused)


def create(profile_name: str, file: Path | str | None = None, max_cells: int | None = None,
           hosts: str | None = None) -> st.CampaignState:
    """A new campaign from a file (default: the profile's campaign.toml), saved, not yet running.
    Everything is checked (the file, its caps, `--hosts`, every host's lock) before its folder is made,
    so a refusal leaves no campaign behind."""
    path = Path(file) if file else st.campaign_file(profile_name)
    spec = load(path, max_cells=max_cells)   # CampaignError names the file and key
    cells = plan_cells(spec)
    doc = spec.to_json()
    if hosts:
        from .parallel import with_hosts

        doc = with_hosts(doc, hosts, str(path))    # ValueError: one line
    check_lock(profile_name, doc)
    try:
        raw = read_capped(path, limits.MAX_CAMPAIGN_FILE_BYTES)
    except (OSError, FileRefused) as exc:
        raise CampaignError(f"{path}: cannot read: {exc}") from None
    state = st.CampaignState(id=st.new_id(profile_name), profile=profile_name, spec=doc, cells=cells)
    write_atomic(st.inside(state.dir / "campaign.toml", state.dir), raw)
    st.save(state)
    return state


def prepare_resume(profile_name: str, campaign_id: str) -> st.CampaignState:
    state = st.load(profile_name, campaign_id)
    if owner.driver_alive(state):
        raise ControlError(f"campaign {state.id} is running (driver pid {state.driver_pid}); nothing to resume")
    if state.status == "finished":
        raise ControlError(f"campaign {state.id} is finished; nothing to resume")
    check_lock(profile_name, state.spec, state.id)
    try:   # the prompts file may have changed since the campaign was made
        check_dataset(from_dict(state.spec, str(state.dir / "campaign.toml")), str(state.dir / "campaign.toml"))
    except CampaignError as exc:
        raise ControlError(str(exc)) from None
    for cell in state.cells:   # a cell a stop cut short is redone; one a kill cut short is found mid-way
        if cell.status == "interrupted":
            cell.status, cell.note = "queued", "redone after the campaign was stopped during it"
    st.save(state)
    return state


def start(state: st.CampaignState) -> int:
    """Start the driver of a campaign `create` has just made; returns its pid. When it cannot start
    (another campaign took a host meanwhile, no log can be opened), the campaign, which never ran,
    is removed: a refusal leaves no record behind, not one 'running' with no driver."""
    try:
        return spawn(state)
    except (ControlError, OSError):
        discard(state)
        raise


def discard(state: st.CampaignState) -> None:
    """Remove the folder of a campaign that never ran (only one inside the profile's campaigns folder)."""
    import shutil

    if any(c.status != "queued" or c.rounds for c in state.cells):
        return
    try:
        folder = st.inside(state.dir, st.campaigns_dir(state.profile))
    except (st.PathRefused, st.StateRefused):
        return
    shutil.rmtree(folder, ignore_errors=True)


def spawn(state: st.CampaignState) -> int:
    """Start the detached driver with a fresh token in its environment; returns its pid.

    One writer at a time: the driver waits on its stdin until this process has saved who it is
    (`owner.driver_spawned`) and closed the pipe, and only then reads the campaign. Once started,
    the driver alone writes the state, so this save never lands over the driver's first one."""
    check_lock(state.profile, state.spec, state.id)
    token = driver.new_token()
    folder = st.inside(state.dir, st.campaigns_dir(state.profile))
    fd = os.open(folder / "driver.log", os.O_WRONLY | os.O_APPEND | os.O_CREAT | getattr(os, "O_NOFOLLOW", 0),
                 0o600)
    with os.fdopen(fd, "ab") as log:
        proc = subprocess.Popen([sys.executable, "-m", "console", "campaign", "_drive", state.id,
                                 "--profile", state.profile], stdin=subprocess.PIPE, stdout=log, stderr=log,
                                start_new_session=True, env={**os.environ, driver.TOKEN_ENV: token})
    assert proc.stdin is not None
    try:
        owner.driver_spawned(state, proc.pid, token)
    except BaseException:
        proc.kill()   # still waiting for its handover: it has read and written nothing
        proc.stdin.close()
        _reap_when_done(proc)
        raise
    proc.stdin.close()   # the handover: the driver reads the campaign from here on, and alone writes it
    _reap_when_done(proc)
    return proc.pid


def wait_for_handover() -> None:
    """In a driver `spawn` started: wait until the spawner has saved the driver's identity and closed
    this process's stdin, before the campaign is read. A driver run any other way waits for nothing."""
    if not os.environ.get(driver.TOKEN_ENV):
        return
    try:
        while sys.stdin.buffer.read(1 << 16):
            pass
        null = os.open(os.devnull, os.O_RDONLY)   # what the driver starts reads nothing, as before
        os.dup2(null, 0)
        os.close(null)
    except (OSError, ValueError, AttributeError):
        return


def _reap_when_done(proc: subprocess.Popen) -> None:
    """Wait for the driver in a thread of its own: a console that started it lives on after it ends,
    and an ended child nobody waits for stays a zombie under it for as long as the console runs.
    The thread is a daemon, so a CLI that started the driver still exits at once (init adopts it)."""
    threading.Thread(target=proc.wait, name=f"campaign-driver-{proc.pid}", daemon=True).start()


def stop(profile_name: str, campaign_id: str) -> int:
    """Ask a running campaign to stop (it stops its server and saves); returns the driver's pid.
    Only a driver proven by pid, start time and token is signalled."""
    state = st.load(profile_name, campaign_id)
    if state.driver_pid is None or not driver.signal_driver(state.driver_pid, state.driver_start, state.driver_token):
        raise ControlError(f"campaign {state.id} has no running driver (status {state.status})")
    return state.driver_pid


def latest(profile_name: str) -> st.CampaignState | None:
    found = st.read_campaigns(profile_name).records
    return max(found, key=lambda s: s.created_at) if found else None
