"""No value from a profile, script, log or user becomes an option of a command.

Every command builder of the server engine runs with hostile values (a leading
`-`, `--`, newlines, `$(...)`, backquotes, globs) against LocalHost and against
a real OpenSSH sshd. A file or folder named exactly like each value sits in a
sandbox, so a builder that treats the value as a path reads it back; one that
lets it become an option (`find -delete`) changes the sandbox, which the test
sees. Commands start in the sandbox (locally by chdir, over SSH by the sshd's
ForceCommand) with HOME pointing at it, so even a broken builder can only
damage the sandbox.
"""
from __future__ import annotations

import asyncio
import hashlib
import os
from pathlib import Path

import pytest

from console.hosts import LocalHost, SSHHost
from console.servers import configs as cfgs
from console.servers import lifecycle
from console.servers.logtail import LogTail, last_lines_argv
from console.servers.monitor import ServerMonitor
from console.store.launches import LaunchRecord
from console.session import HostSession
from profiles import store
from profiles.atomic import write_atomic
from profiles.paths import known_hosts_file
from profiles.profile import Profile, ProfileError, profile_from_dict
from tests.realparts import make_sshd

HOSTILE = ["-delete", "--", "-n", "--help", "-f", "-rf", "*", "?", "[a]", "$(touch PWNED)", "`touch PWNED2`",
           "x\n-delete", "-exec", "--follow=name", ";rm -rf .", "-c+0"]
# Over SSH (each command a round trip) one value of each kind: option, end of
# options, follow-for-ever, command substitution, newline, glob.
HOSTILE_SSH = ["-delete", "--", "-f", "$(touch PWNED)", "x\n-delete", "*"]
CONTENT = "7\n"


def _snapshot(folder: Path) -> dict[str, str]:
    out = {}
    for root, dirs, files in os.walk(folder):
        for name in dirs:
            out[os.path.relpath(os.path.join(root, name), folder)] = "dir"
        for name in files:
            path = os.path.join(root, name)
            out[os.path.relpath(path, folder)] = hashlib.sha256(open(path, "rb").read()).hexdigest()
    return out


def _sandbox(base: Path) -> Path:
    box = base / "box"
    box.mkdir()
    for value in HOSTILE:
        (box / value).write_text(CONTENT)            # a file named like the value
        (box / f"{value}.d").mkdir()                 # and a folder of scripts named like it
        (box / f"{value}.d" / "a.sh").write_text("#!/bin/sh\necho a\n")
    (box / "canary.sh").write_text("#!/bin/sh\necho canary\n")
    (box / "sub").mkdir()
    (box / "sub" / "keep.txt").write_text("keep\n")
    return box


@pytest.fixture
def sandboxed_sshd(tmp_path):
    """A real sshd whose sessions start in (and call HOME) a sandbox folder."""
    box = _sandbox(tmp_path)
    server = make_sshd(tmp_path / "sshd")
    config = server.dir / "sshd_config"
    config.write_text(config.read_text() + f'ForceCommand cd {box} && HOME={box} exec sh -c "$SSH_ORIGINAL_COMMAND"\n')
    server.start()
    yield server, box
    server.stop()


async def _collect(lines) -> list[str]:
    return [line async for line in lines]


async def _run_every_builder(session: HostSession, box: Path, values: list[str] = HOSTILE) -> list[str]:
    """Run each builder with each hostile value; return what went wrong (as text)."""
    host = session.host
    problems = []
    for value in values:
        readable = "\n" not in value
        # the case: `scripts_dir = "-delete"` made `find` delete the working directory
        session.profile.server.scripts_dir = value
        session.profile.server.configs = []
        await cfgs.discover(session)
        # launch configs: scripts_dir and configs entries
        session.profile.server.scripts_dir = f"{value}.d"
        session.profile.server.configs = [f"~/{value}"]
        found = await cfgs.discover(session)
        scripts = {c.script: c for c in found}
        if str(box / value) not in scripts or scripts[str(box / value)].text != CONTENT:
            problems.append(f"configs entry {value!r} not read as a file: {sorted(scripts)}")
        if readable and str(box / f"{value}.d" / "a.sh") not in scripts:
            problems.append(f"scripts_dir {value!r} not listed as a folder: {sorted(scripts)}")
        config = await cfgs.read_config(session, value)
        if config.text != CONTENT:
            problems.append(f"read_config({value!r}) read {config.text!r} ({config.error})")
        # log tails: whole file, a byte range, the last lines, the crash triage read
        try:  # `tail -f` taken as an option would follow stdin for ever
            lines = await asyncio.wait_for(_collect(LogTail(host, value).lines(follow=False)), 30)
        except asyncio.TimeoutError:
            lines = ["(hung)"]
        if lines != ["7"]:
            problems.append(f"LogTail({value!r}) gave {lines!r}")
        if await LogTail(host, value).read_range(0, 10) != ["7"]:
            problems.append(f"read_range({value!r}) did not read the file")
        tail = await host.run(last_lines_argv(value, 5), timeout=20)
        if tail.stdout != CONTENT:
            problems.append(f"server logs tail of {value!r} gave {tail.stdout!r} {tail.stderr!r}")
        record = LaunchRecord(id="x", config="x", script=None, log=value, exit_file=value)
        state = await lifecycle.probe(host, record)
        if state.exit_status != 7:
            problems.append(f"probe read exit file {value!r} as {state.exit_status}")
        await ServerMonitor(session, record)._final_verdict()
        # launch: the script path and the log folder
        session.profile.server.log_dir = f"{value}.logs"
        try:
            launched = await lifecycle.launch(session, "hostile", value)
        except lifecycle.LaunchError as exc:
            problems.append(f"launch of script {value!r} refused: {exc}")
        else:
            if launched.script != str(box / value) or not launched.log.startswith(str(box / f"{value}.logs") + "/"):
                problems.append(f"launch paths not absolute in the sandbox: {launched.script!r} {launched.log!r}")
        problems += await _campaign_builders(session, box, value)
    return problems


async def _campaign_builders(session: HostSession, box: Path, value: str) -> list[str]:
    """Every campaign path builder with the value as a campaign id, a cell name, a flag name and a grid value."""
    from console.store import campaigns as cst
    from console.campaign.grid import PLAIN_VALUE, GridError, derive
    from console.campaign.runner import remote_script_path, write_remote_script
    from console.servers.launch import parse_script

    problems = []
    try:
        cst.campaign_dir(session.profile.name, value)
        problems.append(f"campaign id {value!r} accepted")
    except cst.StateRefused:
        pass
    state = cst.CampaignState(id="campaign-20260101-000000", profile=session.profile.name, spec={}, cells=[])
    local = cst.script_file(state, value)
    if local.parent != state.dir / "scripts" or local.name.startswith("."):
        problems.append(f"cell {value!r}: local script {local}")
    remote = remote_script_path(str(box / "canary.sh"), state.id, value)
    if os.path.dirname(remote) != str(box) or not os.path.basename(remote).startswith(".gpudeck-"):
        problems.append(f"cell {value!r}: remote script {remote!r} outside {box}")
    else:
        await write_remote_script(session.host, remote, "#!/bin/sh\necho derived\n")
        written = Path(remote)
        if not written.is_file() or written.read_text() != "#!/bin/sh\necho derived\n":
            problems.append(f"cell {value!r}: derived script not written at {remote!r}")
        written.unlink(missing_ok=True)
    base = "#!/bin/sh\nexec llama-server -m /m.gguf --port 1 --parallel 1\n"
    try:                           # as a flag name: refused, or set as that flag and nothing else
        parsed = parse_script(derive(base, {value: 1}))
        if parsed.raw_flags.get(value.lstrip("-")) != "1":
            problems.append(f"flag {value!r} derived as {parsed.raw_flags}")
    except GridError:
        pass
    if "\n" not in value:       # as a grid value (the campaign file refuses newlines): one word, or refused
        try:
            if parse_script(derive(base, {"--parallel": value})).raw_flags.get("parallel") != value:
                problems.append(f"value {value!r} not passed as one word")
        except GridError:
            pass
        try:                       # where the shell reads the command twice, only a plain value is written
            derive(base.replace("exec ", "eval "), {"--parallel": value})
            if not PLAIN_VALUE.fullmatch(value):
                problems.append(f"value {value!r} derived inside an eval")
        except GridError:
            pass
    return problems


def _check_nothing_else_changed(box: Path, before: dict[str, str]) -> None:
    after = _snapshot(box)
    lost = {k: v for k, v in before.items() if after.get(k) != v}
    assert not lost, f"files changed or deleted: {sorted(lost)[:10]}"
    new = sorted(k for k in after if k not in before and ".logs" not in k.split("/")[0])
    assert not new, f"files created outside the launch log folders: {new[:10]}"
    assert not Path("PWNED").exists() and not Path("PWNED2").exists()


@pytest.mark.slow
async def test_every_builder_treats_hostile_values_as_paths_locally(tmp_path, monkeypatch):
    box = _sandbox(tmp_path)
    monkeypatch.chdir(box)
    monkeypatch.setenv("HOME", str(box))
    before = _snapshot(box)
    session = HostSession(profile=Profile(name="local"), host=LocalHost())
    problems = await _run_every_builder(session, box)
    _check_nothing_else_changed(box, before)
    assert not problems, "\n".join(problems)


async def test_every_builder_treats_hostile_values_as_paths_over_ssh(sandboxed_sshd, gpudeck_home):
    server, box = sandboxed_sshd
    write_atomic(known_hosts_file(), server.known_hosts.read_text())
    profile = profile_from_dict("sandbox", {
        "transport": "ssh", "ssh": {"host": "gpudeck-test", "config_file": str(server.ssh_config),
                                    "connect_timeout_s": 5}})
    before = _snapshot(box)
    session = HostSession(profile=profile, host=SSHHost(profile))
    try:
        problems = await _run_every_builder(session, box, HOSTILE_SSH)
    finally:
        await session.host.close()
    _check_nothing_else_changed(box, before)
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("key, value", [
    ("server.scripts_dir", "-delete"), ("server.log_dir", "--"), ("server.configs", ["ok.sh", "-rf"]),
    ("ssh.identity_file", "-oProxyCommand=x"), ("ssh.config_file", "-F"), ("model.config", "-x"),
    ("ssh.host", "-oProxyCommand=touch x"), ("ssh.user", "-l"), ("server.scripts_dir", "a\nb"),
    ("gpu.smi_command", ["-x", "nvidia-smi"]), ("gpu.smi_command", ["python3", "a\nb"]),
])
def test_profile_refuses_paths_that_read_as_options(key, value):
    section, name = key.split(".")
    doc = {"transport": "ssh", "ssh": {"host": "h"}}
    doc.setdefault(section, {})[name] = value
    with pytest.raises(ProfileError) as info:
        profile_from_dict("p", doc, "/x/p.toml")
    message = str(info.value)
    assert f"/x/p.toml: key '{key}'" in message and "\n" not in message


def test_profile_keeps_ordinary_paths():
    assert profile_from_dict("p", {"gpu": {"smi_command": ["python3", "-u", "/opt/smi.py"]}}).gpu.smi_command[1] == "-u"
    profile = profile_from_dict("p", {"transport": "ssh", "ssh": {"host": "h", "identity_file": "~/.ssh/id"},
                                      "server": {"scripts_dir": "scripts/a-b", "configs": ["x-1.sh"]}})
    assert profile.server.scripts_dir == "scripts/a-b"
    store.save(profile)
    assert store.load("p").server.configs == ["x-1.sh"]
