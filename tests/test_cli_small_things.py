"""Small CLI edges an operator met: --version, a hidden driver command that showed in help, a
reason printed twice, `tasks` alone, `bench -p`, and which catalogue GPU a short name picked."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from profiles import store
from profiles.profile import profile_from_dict
from tests.cli import gpudeck

ROOT = Path(__file__).resolve().parent.parent


def test_version_names_the_commit_it_runs_from():
    out = gpudeck("--version")
    head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "--short=12", "HEAD"], capture_output=True,
                          text=True, check=True).stdout.strip()
    assert out.returncode == 0 and out.stdout.startswith("gpudeck ")
    assert f"(commit {head}" in out.stdout, out.stdout


def test_version_outside_a_checkout_says_the_commit_is_unknown(tmp_path):
    """A copy of the package with no git history beside it: the version stands, the commit is
    named unknown rather than guessed."""
    import shutil

    shutil.copytree(ROOT / "console", tmp_path / "console")
    shutil.copytree(ROOT / "profiles", tmp_path / "profiles")
    out = subprocess.run([sys.executable, "-m", "console", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert out.returncode == 0 and "commit unknown" in out.stdout, out.stdout + out.stderr


def test_version_from_a_checkout_run_as_source_is_the_checkouts(tmp_path):
    """`python -m console` in a checkout that was never installed (as on a GPU machine that receives
    the tree): the version is its pyproject's, and the commit its own, not "(not installed)". The
    copy's pyproject names a version no installed gpudeck has, so the answer can only come from it."""
    import shutil

    shutil.copytree(ROOT / "console", tmp_path / "console", ignore=shutil.ignore_patterns("__pycache__"))
    shutil.copytree(ROOT / "profiles", tmp_path / "profiles", ignore=shutil.ignore_patterns("__pycache__"))
    pyproject = (ROOT / "pyproject.toml").read_text()
    (tmp_path / "pyproject.toml").write_text(pyproject.replace('version = "', 'version = "7.7.7.dev3+', 1))
    git = ["git", "-C", str(tmp_path), "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run([*git, "init", "-q"], check=True)
    subprocess.run([*git, "add", "-A"], check=True)
    subprocess.run([*git, "commit", "-qm", "copy"], check=True)
    head = subprocess.run([*git, "rev-parse", "--short=12", "HEAD"], capture_output=True, text=True,
                          check=True).stdout.strip()
    out = subprocess.run([sys.executable, "-m", "console", "--version"], capture_output=True, text=True,
                         cwd=tmp_path, env={**os.environ, "PYTHONPATH": str(tmp_path)}, timeout=60)
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("gpudeck 7.7.7.dev3+") and f"(commit {head})" in out.stdout, out.stdout
    assert "not installed" not in out.stdout


def test_campaign_help_lists_no_hidden_driver(gpudeck_home):
    out = gpudeck("campaign", "--help")
    assert out.returncode == 0 and "_drive" not in out.stdout and "SUPPRESS" not in out.stdout
    assert "resume" in out.stdout


def test_gpus_without_nvidia_smi_says_so_once(gpudeck_home, tmp_path):
    store.save(profile_from_dict("local", {"transport": "local"}))
    bare = tmp_path / "bin"
    bare.mkdir()
    for tool in ("sh", "ps", "cat", "env"):  # a host with a shell but no nvidia-smi
        found = subprocess.run(["sh", "-c", f"command -v {tool}"], capture_output=True, text=True).stdout.strip()
        if found:
            os.symlink(found, bare / tool)
    out = gpudeck("gpus", "-p", "local", env={"PATH": str(bare)})
    assert out.returncode == 1
    assert (out.stdout + out.stderr).count("nvidia-smi not found") == 1


def test_plain_tasks_lists_the_board(gpudeck_home):
    store.save(profile_from_dict("local", {"transport": "local"}))
    assert gpudeck("tasks", "add", "look at the EP8 crash", "-p", "local").returncode == 0
    out = gpudeck("tasks", "-p", "local")
    assert out.returncode == 0 and "look at the EP8 crash" in out.stdout


def test_bench_takes_the_global_short_profile_option(gpudeck_home):
    store.save(profile_from_dict("box", {"transport": "local"}))
    out = gpudeck("bench", "-p", "box", "--list")
    assert out.returncode == 0, out.stderr


def test_a_short_gpu_name_says_which_catalogue_gpu_it_chose(gpudeck_home):
    config = ROOT / "tests/fixtures/model-configs/Llama-2-13b.json"
    out = gpudeck("roofline", "--model-config", str(config), "--gpu", "H100", "--count", "8", "--json")
    assert out.returncode == 0
    assert "'H100' taken as 'H100 SXM'" in out.stderr
    assert out.stdout.lstrip().startswith("{")  # JSON on stdout stays clean


def test_server_status_on_an_unreachable_host_says_the_states_are_stale(gpudeck_home):
    import socket

    with socket.socket() as s:  # a port nobody listens on
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    store.save(profile_from_dict("gone", {"transport": "ssh", "ssh": {"host": "127.0.0.1", "port": port,
                                                                       "user": "nobody", "connect_timeout_s": 2}}))
    out = gpudeck("server", "status", "-p", "gone")
    assert out.returncode == 1
    assert "unreachable" in out.stderr and "last known" in out.stderr
    local = gpudeck("server", "status", "-p", "gone", "--json")
    assert local.returncode == 1 and '"reachable": false' in local.stdout


def test_bad_input_exits_2_whatever_refuses_it(gpudeck_home):
    config = str(ROOT / "tests/fixtures/model-configs/Llama-2-13b.json")
    zero = gpudeck("roofline", "--model-config", config, "--gpu", "H100 SXM", "--count", "0")
    word = gpudeck("roofline", "--model-config", config, "--gpu", "H100 SXM", "--count", "8", "--batch", "x")
    assert zero.returncode == word.returncode == 2
    assert zero.stderr.count("\n") == 1 and "--count" in zero.stderr
