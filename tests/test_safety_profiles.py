"""Profiles and state files: whole-string names, ranges, private modes, read-only homes."""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
from pathlib import Path

import pytest

from console.store import crashes, launches
from console.store.launches import LaunchRecord
from console.servers.triage import TriageResult
from profiles import paths, store
from profiles.atomic import write_atomic
from profiles.profile import ProfileError, profile_from_dict
from tests.cli import gpudeck

ROOT = Path(__file__).resolve().parent.parent


@pytest.mark.parametrize("name", ["abc\n", "abc\nx", "a b", "\nabc", "abc/", "é"])
def test_profile_names_match_the_whole_string(name):
    with pytest.raises(ValueError):
        paths.check_name(name)
    with pytest.raises(ProfileError):
        store.load(name)
    assert not store.exists(name)


def test_cli_refuses_a_name_with_a_newline(gpudeck_home):
    result = gpudeck("profiles", "add", "abc\n", "--local", home=gpudeck_home)
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
    assert not list(paths.profiles_dir().glob("abc*"))


@pytest.mark.parametrize("section, key, value, expected", [
    ("ssh", "connect_timeout_s", "-1", "a finite number of seconds above 0"),
    ("ssh", "connect_timeout_s", "0", "a finite number of seconds above 0"),
    ("ssh", "connect_timeout_s", "inf", "a finite number of seconds above 0"),
    ("ssh", "command_timeout_s", "nan", "a finite number of seconds above 0"),
    ("ssh", "command_timeout_s", "-inf", "a finite number of seconds above 0"),
    ("server", "kill_grace_s", "inf", "a finite number of seconds, 0 or more"),
    ("server", "kill_grace_s", "-0.5", "a finite number of seconds, 0 or more"),
    ("gpu", "sample_interval_ms", "0", "a number of milliseconds above 0"),
    ("gpu", "count", "-2", "a count of 0 or more"),
    ("bench", "input_len", "-1", "a token count above 0"),
])
def test_out_of_range_values_are_one_line_errors(gpudeck_home, section, key, value, expected):
    path = paths.profile_file("bad")
    path.parent.mkdir(parents=True, exist_ok=True)
    text = "transport = 'ssh'\n[ssh]\nhost = 'h'\n" + (f"{key} = {value}\n" if section == "ssh"
                                                          else f"[{section}]\n{key} = {value}\n")
    path.write_text(text)
    with pytest.raises(ProfileError) as info:
        store.load("bad")
    message = str(info.value)
    assert message.startswith(f"{path}: key '{section}.{key}': expected {expected}"), message
    assert "\n" not in message
    listing = gpudeck("profiles", "list", home=gpudeck_home)
    assert listing.returncode == 0 and "Traceback" not in listing.stderr
    assert f"! {path}: key '{section}.{key}'" in listing.stdout
    shown = gpudeck("profiles", "show", "bad", home=gpudeck_home)
    assert shown.returncode != 0 and shown.stderr.strip() == f"gpudeck: {message}"


def test_in_range_values_load():
    profile = profile_from_dict("p", {"ssh": {"connect_timeout_s": 0.5}, "server": {"kill_grace_s": 0}})
    assert profile.ssh.connect_timeout_s == 0.5 and profile.server.kill_grace_s == 0.0


def _read_only(home: Path) -> list[str]:
    """A command prefix that runs with `home` mounted read-only (a real EROFS, which
    even root can't write through; permission bits would not stop root)."""
    if shutil.which("unshare") is None:
        pytest.fail("unshare not found: install util-linux", pytrace=False)
    probe = subprocess.run(["unshare", "--mount", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"unshare --mount is not permitted here: {probe.stderr.strip()}", pytrace=False)
    return ["unshare", "--mount", "sh", "-c", 'mount --bind -o ro "$0" "$0" && exec "$@"', str(home)]


@pytest.mark.parametrize("prepared", [False, True])
def test_read_only_commands_work_on_a_read_only_home(tmp_path, prepared):
    home = tmp_path / "home"
    home.mkdir()
    if prepared:
        assert gpudeck("profiles", "add", "box", "--ssh", "u@h", home=home).returncode == 0
    wrap = _read_only(home)
    before = sorted(p.relative_to(home) for p in home.rglob("*"))
    for argv in (["profiles", "list"], ["profiles", "list", "--json"], ["tasks", "list"], ["tasks", "list", "--json"]):
        result = gpudeck(*argv, home=home, wrap=wrap)
        assert result.returncode == 0 and "Traceback" not in result.stderr, (argv, result.stderr[-800:])
        if argv[0] == "profiles" and "--json" not in argv:
            assert "local" in result.stdout and (("box" in result.stdout) == prepared)
    # and a write fails as one line, no traceback
    result = gpudeck("profiles", "add", "other", "--local", home=home, wrap=wrap)
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr[-800:]
    assert len(result.stderr.strip().splitlines()) == 1, result.stderr
    assert sorted(p.relative_to(home) for p in home.rglob("*")) == before


def _mode(path: Path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_state_dirs_are_0700_and_records_0600(gpudeck_home):
    os.umask(0o022)
    store.ensure_local()
    record = LaunchRecord(id="r1", config="c", script="/s.sh", log="/l.log", exit_file="/l.log.exit")
    launches.save("local", record)
    crash = crashes.write_crash("local", record, TriageResult(cls="cuda-oom", line=3, excerpt=["x"], server=None,
                                                      summary="s", ready_seen=False))
    files = [paths.profile_file("local"), launches.launches_dir("local") / "r1.json",
             crashes.crashes_dir("local") / f"{crash.id}.json"]
    for path in files:
        assert _mode(path) == 0o600, path
    for root in (paths.config_dir(), paths.data_dir()):
        for folder in [root, *(p for p in root.rglob("*") if p.is_dir())]:
            assert _mode(folder) == 0o700, folder


def test_existing_open_state_dirs_are_tightened_on_the_next_write(gpudeck_home):
    folder = paths.profile_data_dir("local") / "runs"
    folder.mkdir(parents=True, mode=0o755)
    for path in (paths.data_dir(), folder.parent, folder):
        os.chmod(path, 0o755)
    write_atomic(folder / "run.json", "{}\n")
    assert _mode(folder / "run.json") == 0o600
    for path in (paths.data_dir(), paths.data_dir() / "profiles", folder.parent, folder):
        assert _mode(path) == 0o700, path
    outside = gpudeck_home.parent / "elsewhere"
    outside.mkdir(mode=0o755, exist_ok=True)
    os.chmod(outside, 0o755)
    write_atomic(outside / "x.json", "{}\n")
    assert _mode(outside) == 0o755  # a folder the operator chose keeps its mode
