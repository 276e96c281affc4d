"""`control.spawn` saves who the driver is before the driver reads the campaign: once started, the
driver alone writes its state, so the spawner's save never lands over the driver's first one."""
from __future__ import annotations

import subprocess

from console.campaign import control
from console.store import campaigns as st
from tests.test_campaign_driver_reaped import nothing_left_to_run


def test_the_spawners_save_never_overwrites_what_the_driver_wrote(tmp_path, monkeypatch):
    state = nothing_left_to_run(tmp_path)

    def slow_spawner(proc: subprocess.Popen) -> None:
        # the spawner is held up until its driver has run to its end (a loaded machine, a slow
        # disk): whatever the spawner saves after this point lands over the driver's own saves
        proc.wait(timeout=120)

    monkeypatch.setattr(control, "_reap_when_done", slow_spawner)
    pid = control.spawn(state)
    final = st.load("h1", state.id)
    assert final.status == "finished", f"the driver's ending was overwritten: status {final.status!r}"
    assert final.finished_at is not None
    assert final.driver_pid == pid   # who drove it is still known
