"""The Server tab says why a launch's state is unknown: its host, or Slurm, not answering.

Driven with Pilot on the whole console. The host case is a real SSH client against a port
nothing listens on; the Slurm case is a Slurm profile whose `scontrol` (a stand-in first on
PATH, as a client does with slurmctld down) fails with terminal controls in its error.
"""
from __future__ import annotations

import os

from console.safe_text import is_clean
from console.store import launches
from console.store.launches import LaunchRecord
from profiles import store
from profiles.profile import profile_from_dict
from screens.app import GpudeckApp
from tests.harness import wait_until
from tests.realparts import free_port


def _live_launch(profile: str, scripts, config: str, **extra) -> LaunchRecord:
    scripts.mkdir(exist_ok=True)
    script = scripts / f"{config}.sh"
    script.write_text("#!/bin/sh\nexec sleep 300\n")
    record = LaunchRecord(id=f"{config}-1", config=config, script=str(script), log=str(scripts / "x.log"),
                          exit_file=str(scripts / "x.log.exit"), pid=4242, pgid=4242, state="ready", **extra)
    launches.save(profile, record)
    return record


async def _reason_on_screen(app: GpudeckApp, pilot, config: str, says: str) -> str:
    pane = app.panes["server"]
    await pilot.press("2")
    line = pane.query_one("#metrics")
    await wait_until(pilot, lambda: pane.selected == config and line.display and says in str(line.render()),
                     what=f"the reason {config} is unknown")
    assert line.region.height >= 1, "the reason line takes no room on screen"
    row = [str(cell) for cell in pane.query_one("#configs").get_row(config)]
    assert row[1:] == ["? unknown", "N/A"], "an unknown launch's row reads as running for a known time"
    return str(line.render())


async def test_a_launch_on_a_host_that_does_not_answer_shows_unknown_and_why(tmp_path):
    closed = free_port()  # nothing listens there: every connection is refused
    store.save(profile_from_dict("deadbox", {
        "transport": "ssh", "ssh": {"host": "127.0.0.1", "port": closed, "user": "nobody", "connect_timeout_s": 5},
        "server": {"scripts_dir": str(tmp_path / "scripts")}}))
    _live_launch("deadbox", tmp_path / "scripts", "smol")
    app = GpudeckApp(profile_name="deadbox")
    async with app.run_test(size=(160, 45)) as pilot:
        shown = await _reason_on_screen(app, pilot, "smol", "host not answering since ")
    assert "? unknown · host not answering since " in shown
    assert f"connection refused by 127.0.0.1:{closed}" in shown


async def test_a_slurm_job_slurm_does_not_answer_about_shows_unknown_and_why(tmp_path, monkeypatch):
    shim = tmp_path / "shim"
    shim.mkdir()
    # the error names the controller, wrapped in an OSC 52 clipboard write and a screen wipe
    (shim / "scontrol").write_text("#!/bin/sh\nprintf 'slurm_load_jobs error: \\033]52;c;aGk=\\007Unable to contact "
                                   "slurm \\033[2Jcontroller\\n' >&2\nexit 1\n")
    (shim / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    store.save(profile_from_dict("cluster", {
        "transport": "local", "slurm": {"enabled": True, "partition": "gpu"},
        "server": {"scripts_dir": str(tmp_path / "scripts"), "log_dir": str(tmp_path / "logs")}}))
    _live_launch("cluster", tmp_path / "scripts", "big",
                 slurm={"job_id": "4242", "state": "RUNNING", "nodes": ["n1"], "batch_host": "n1"})
    app = GpudeckApp(profile_name="cluster")
    async with app.run_test(size=(160, 45)) as pilot:
        shown = await _reason_on_screen(app, pilot, "big", "Slurm not answering since ")
    assert "? unknown · Slurm not answering since " in shown
    assert "Unable to contact slurm" in shown and "controller" in shown
    assert is_clean(shown) and "\x1b" not in shown and "\x07" not in shown, "the error's controls reached the screen"


async def test_the_tab_follows_a_launch_through_an_outage_to_its_end(scripts_profile, sshd, tmp_path):
    """Real sshd: launched over SSH, the sshd stops before the console starts, the server ends during
    the outage; once the sshd is back the row reads crashed (the exit file's status 3), the reason
    goes, and the configs come from the host again (one the records never named among them)."""
    from pathlib import Path

    from console.servers import lifecycle
    from console.session import HostSession

    ssh_profile, scripts = scripts_profile
    go = tmp_path / "go"
    script = scripts / "short.sh"
    script.write_text(f"#!/bin/sh\nwhile [ ! -e {go} ]; do sleep 0.1; done\nexit 3\n")
    script.chmod(0o755)
    session = HostSession.open(ssh_profile)
    try:
        record = await lifecycle.launch(session, "short", str(script))
    finally:
        await session.host.close()
    (scripts / "other.sh").write_text("#!/bin/sh\nexec sleep 300\n")
    sshd.stop()
    try:
        app = GpudeckApp(profile_name=ssh_profile.name)
        async with app.run_test(size=(160, 45)) as pilot:
            pane = app.panes["server"]
            line = pane.query_one("#metrics")
            try:
                shown = await _reason_on_screen(app, pilot, "short", "connection refused")
                assert [c.name for c in pane.configs] == ["short"]  # named by the launch record alone
                go.touch()
                await wait_until(pilot, lambda: Path(record.exit_file).exists(), what="the exit file")
                assert str(pane.query_one("#configs").get_row("short")[1]) == "? unknown"
            finally:
                sshd.start()
            await pilot.press("ctrl+r")  # the operator's "reconnect now": no wait for the backoff
            await wait_until(pilot, lambda: str(pane.query_one("#configs").get_row("short")[1]) == "✖ crashed",
                             seconds=60, what="the ended launch's row")
            await wait_until(pilot, lambda: [c.name for c in pane.configs] == ["other", "short"],
                             what="the configs read from the host again")
            assert pane.latest["short"].exit_status == 3
            await wait_until(pilot, lambda: not line.display or "unknown" not in str(line.render()),
                             what="the reason gone")
    finally:
        go.touch()
    assert "host not answering since " in shown
