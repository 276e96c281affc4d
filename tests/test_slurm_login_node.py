"""A Slurm profile whose login node is reached over SSH (a real sshd): sinfo, sbatch and
scancel all travel through it."""
from __future__ import annotations

import json

import pytest

from tests.cli import gpudeck
from tests.realparts import make_sshd

LOGIN_ONLY = {"SLURM_CONF": None}  # only the login node knows the cluster


@pytest.fixture(scope="module")
def login_sshd(tmp_path_factory, slurm_cluster):
    """An sshd whose sessions carry SLURM_CONF (as a login node's environment would name its cluster)."""
    server = make_sshd(tmp_path_factory.mktemp("login-sshd"))
    with open(server.dir / "sshd_config", "a") as f:
        f.write("AcceptEnv SLURM_CONF\n")
    with open(server.ssh_config, "a") as f:
        f.write(f"  SetEnv SLURM_CONF={slurm_cluster.conf}\n")
    server.start()
    yield server
    server.stop()


def test_check_gpus_launch_and_stop_through_the_login_node(login_sshd, slurm_cluster, gpudeck_home, tmp_path):
    from profiles.atomic import write_atomic
    from profiles.paths import known_hosts_file

    write_atomic(known_hosts_file(), login_sshd.known_hosts.read_text())
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "idle.sh").write_text("#!/bin/sh\necho loading model\nexec sleep 300\n")
    r = gpudeck("profiles", "add", "remote", "--slurm", "--ssh", "gpudeck-test", "--ssh-config",
                str(login_sshd.ssh_config), "--scripts-dir", str(scripts), "--log-dir", str(tmp_path / "logs"),
                env=LOGIN_ONLY)
    assert r.returncode == 0, r.stderr
    check = gpudeck("profiles", "check", "remote", "--json", env=LOGIN_ONLY)
    assert check.returncode == 0, check.stdout + check.stderr
    assert (json.loads(check.stdout)["nodes"], json.loads(check.stdout)["gpus_total"]) == (2, 8)
    gpus = gpudeck("gpus", "-p", "remote", "--json", env=LOGIN_ONLY)
    assert gpus.returncode == 0, gpus.stderr
    assert [n["name"] for n in json.loads(gpus.stdout)["nodes"]] == ["n1", "n2"]
    launched = gpudeck("server", "launch", "idle", "-p", "remote", "--json", env=LOGIN_ONLY)
    assert launched.returncode == 0, launched.stderr
    job_id = json.loads(launched.stdout)["slurm"]["job_id"]
    slurm_cluster.wait_job(job_id, {"RUNNING"})
    stopped = gpudeck("server", "stop", "idle", "-p", "remote", "--json", env=LOGIN_ONLY)
    assert stopped.returncode == 0, stopped.stderr
    assert json.loads(stopped.stdout)["record"]["slurm"]["end"]["state"] == "CANCELLED"
    assert json.loads(stopped.stdout)["record"]["state"] == "stopped"
