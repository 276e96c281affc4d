"""The commands an operator would type to do what a key does: k9s's "show the command" habit.

For a launch: the CLI line (`gpudeck server launch NAME -p PROFILE`), and what the launch does on
the host, written as a person would type it (run the script from its folder, detached, its output
to the launch's log; on a Slurm profile the `sbatch` line), wrapped in `ssh` for a remote host.
gpudeck's own command is the same steps sent base64-wrapped under a watchdog, with a wrapper that
also records the process group and the exit status (console/servers/process_launch.py,
console/slurm/launch.py); the lines here are that command made readable, with the launch's own
paths when it ran. Plain data in, strings out: no I/O.
"""
from __future__ import annotations

import shlex
import time
from typing import TYPE_CHECKING

from .launching import DEFAULT_LOG_DIR, safe_stem

if TYPE_CHECKING:
    from profiles.profile import Profile

    from ..store.launches import LaunchRecord


def cli_launch(config: str, profile: str) -> str:
    return shlex.join(["gpudeck", "server", "launch", config, "-p", profile])


def sh_path(path: str) -> str:
    """`path` for a shell on the host: a relative or `~/` path is read against the home, as gpudeck
    makes it absolute (console/servers/launching.absolute), the rest quoted."""
    if path.startswith("/"):
        return shlex.quote(path)
    rest = path[2:] if path.startswith("~/") else path
    return '"$HOME"/' + shlex.quote(rest) if rest else '"$HOME"'


def _folder(script: str) -> str:
    return script.rsplit("/", 1)[0] if "/" in script else ""


def _name(script: str) -> str:
    return script.rsplit("/", 1)[-1]


def host_command(profile: Profile, config: str, script: str, log: str, launch_id: str) -> str:
    """What the launch runs on the host, typed by hand."""
    if profile.is_slurm:
        argv = ["sbatch", shlex.quote(f"--job-name=gpudeck-{safe_stem(config)}"), f"--output={sh_path(log)}",
                f"--chdir={sh_path(_folder(script))}", shlex.quote(f"--export=ALL,GPUDECK_LAUNCH_ID={launch_id}")]
        if profile.slurm.partition:
            argv.append(shlex.quote(f"--partition={profile.slurm.partition}"))
        if profile.slurm.account:
            argv.append(shlex.quote(f"--account={profile.slurm.account}"))
        return " ".join([*argv, sh_path(script)])
    # run from its own folder (the wrapper's `cd`), detached in its own session, output to the log
    return (f"cd {sh_path(_folder(script))} && GPUDECK_LAUNCH_ID={shlex.quote(launch_id)} "
            f"setsid ./{shlex.quote(_name(script))} >> {sh_path(log)} 2>&1 < /dev/null &")


def over_ssh(profile: Profile, command: str) -> str:
    """`command` as typed from the operator's machine: itself on a local profile, else under ssh."""
    if profile.is_local or not profile.ssh.host:
        return command
    target = f"{profile.ssh.user}@{profile.ssh.host}" if profile.ssh.user else profile.ssh.host
    return shlex.join(["ssh", *(["-p", str(profile.ssh.port)] if profile.ssh.port else []), target, command])


def launch_equivalent(profile: Profile, config: str, script: str, record: LaunchRecord | None = None,
                      server_argv: list[str] | None = None, now: float | None = None) -> list[tuple[str, str]]:
    """(what, command) lines for launching `config`: the CLI, then the host command (the one that
    ran, from `record`, else the one a launch would run now), then the server command its script
    holds when it was understood."""
    if record is not None and record.log and record.script:
        script, log, launch_id = record.script, record.log, record.id
        when = f"ran as launch {record.id}"
    else:
        launch_id = f"{safe_stem(config)}-{time.strftime('%Y%m%d-%H%M%S', time.localtime(now))}"
        log = f"{(profile.server.log_dir or DEFAULT_LOG_DIR).rstrip('/')}/{launch_id}.log"
        when = "a launch now would run"
    lines = [("the same from the command line", cli_launch(config, profile.name)),
             (f"on the host ({when})", over_ssh(profile, host_command(profile, config, script, log, launch_id)))]
    if server_argv:
        lines.append(("the server command in the script", shlex.join(server_argv)))
    return lines
