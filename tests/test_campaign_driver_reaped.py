"""A campaign driver the console started is waited on when it ends: no zombie stays under the console."""
from __future__ import annotations

from pathlib import Path

from console.campaign import control
from console.cli import main
from console.store import campaigns as st
from tests.harness import poll_until


def _gone(pid: int) -> bool:
    """No process with this pid at all: a zombie still has its /proc entry (state Z)."""
    return not Path(f"/proc/{pid}").exists()


def nothing_left_to_run(tmp_path) -> st.CampaignState:
    """A saved campaign on a local profile `h1` whose cells are all done: its driver starts, saves
    'finished' and ends."""
    assert main(["profiles", "add", "h1", "--local", "--scripts-dir", str(tmp_path),
                 "--log-dir", str(tmp_path / "logs")]) == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text("[sweep]\nlevels = [1]\nrepeats = 1\n\n[[config]]\nname = \"a\"\n")
    state = control.create("h1", campaign)
    for cell in state.cells:
        cell.status = "done"
    st.save(state)
    return state


def test_an_ended_driver_is_reaped_by_the_process_that_started_it(tmp_path):
    state = nothing_left_to_run(tmp_path)
    pid = control.spawn(state)
    poll_until(lambda: st.load("h1", state.id).status == "finished", 60, what="the driver to finish")
    poll_until(lambda: _gone(pid), 20, what=f"driver {pid} to be reaped (a zombie stays in /proc)")
