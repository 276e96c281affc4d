"""A Slurm profile against the real two-node test cluster: `profiles check` and `gpus -p`."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from tests.cli import gpudeck


def test_profiles_check_says_sinfo_answers_with_nodes_and_gpus(slurm):
    added = gpudeck("profiles", "add", "cluster", "--slurm", "--partition", "gpu", "--json")
    assert added.returncode == 0, added.stderr
    assert json.loads(added.stdout)["slurm"] == {"enabled": True, "partition": "gpu", "account": None}
    r = gpudeck("profiles", "check", "cluster", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert (doc["ok"], doc["nodes"], doc["gpus_total"]) == (True, 2, 8)
    text = gpudeck("profiles", "check", "cluster")
    assert "sinfo answers" in text.stdout and "2 node(s)" in text.stdout and "8 GPU(s)" in text.stdout


def test_profiles_check_fails_on_a_partition_that_does_not_exist(slurm):
    assert gpudeck("profiles", "add", "nopart", "--slurm", "--partition", "nope").returncode == 0
    r = gpudeck("profiles", "check", "nopart")
    assert r.returncode == 1 and "nope" in r.stdout


def test_slurm_flags_need_slurm(gpudeck_home):
    r = gpudeck("profiles", "add", "x", "--local", "--partition", "gpu")
    assert r.returncode == 2 and "--partition goes with --slurm" in r.stderr
    r = gpudeck("profiles", "add", "x", "--slurm", "--prometheus", "http://127.0.0.1:9")
    assert r.returncode == 2


def test_gpus_lists_each_node_with_state_reason_gpus_and_jobs(slurm, tmp_path):
    assert gpudeck("profiles", "add", "cluster", "--slurm", "--partition", "gpu").returncode == 0
    job = slurm.run("sbatch", "--parsable", "-w", "n2", "--gres=gpu:3", "-o", str(tmp_path / "j.out"),
                    "--wrap", "sleep 120").stdout.strip()
    try:
        slurm.wait_job(job, {"RUNNING"})
        slurm.run("scontrol", "update", "nodename=n1", "state=drain", "reason=fan failure")
        r = gpudeck("gpus", "-p", "cluster", "--json")
        assert r.returncode == 0, r.stderr
        nodes = {n["name"]: n for n in json.loads(r.stdout)["nodes"]}
        assert nodes["n2"]["state"] == "mixed" and nodes["n2"]["jobs"] == [job]
        assert (nodes["n2"]["gpus_used"], nodes["n2"]["gpus_free"]) == (3, 1)
        assert nodes["n1"]["state"] == "drain" and nodes["n1"]["reason"].startswith("fan failure")
        text = gpudeck("gpus", "-p", "cluster").stdout
        assert "fan failure" in text and "3/4" in text
    finally:
        slurm.run("scancel", job, check=False)
        slurm.run("scontrol", "update", "nodename=n1", "state=resume", check=False)


def test_gpus_says_when_slurm_does_not_answer(gpudeck_home, monkeypatch, tmp_path):
    conf = tmp_path / "slurm.conf"  # a controller nobody runs: sinfo fails (or hangs, bounded)
    conf.write_text("ClusterName=gone\nSlurmctldHost=localhost(127.0.0.1)\nSlurmctldPort=9\n"
                    "MessageTimeout=2\nNodeName=x CPUs=1\nPartitionName=p Nodes=x\n")
    monkeypatch.setenv("SLURM_CONF", str(conf))
    assert gpudeck("profiles", "add", "gone", "--slurm").returncode == 0
    r = gpudeck("gpus", "-p", "gone")
    assert r.returncode == 1 and r.stderr.startswith("gpudeck: gone: sinfo") and len(r.stderr.splitlines()) == 1


def test_gpus_with_an_unreachable_dcgm_still_lists_the_nodes_and_says_why_readings_are_missing(slurm):
    assert gpudeck("profiles", "add", "cl", "--slurm", "--dcgm", "http://127.0.0.1:9").returncode == 0
    r = gpudeck("gpus", "-p", "cl", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [n["name"] for n in doc["nodes"]] == ["n1", "n2"] and all(n["live"] is None for n in doc["nodes"])
    assert any(p.startswith("DCGM readings unavailable") for p in doc["problems"])
    assert gpudeck("profiles", "add", "bad", "--slurm", "--dcgm", "ftp://x").returncode == 2


def test_gpus_watch_prints_one_document_per_look(slurm):
    assert gpudeck("profiles", "add", "cluster", "--slurm").returncode == 0
    proc = subprocess.Popen([sys.executable, "-m", "console", "gpus", "-p", "cluster", "--watch", "--json",
                             "--interval", "0.2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                            env=dict(os.environ))
    try:
        docs = [json.loads(proc.stdout.readline()) for _ in range(2)]
    finally:
        proc.kill()
        proc.wait()
    assert [[n["name"] for n in d["nodes"]] for d in docs] == [["n1", "n2"], ["n1", "n2"]]
    assert docs[1]["taken_at"] > docs[0]["taken_at"]


def _fake_slurm(tmp_path, monkeypatch, scontrol_body: str, squeue_body: str = "") -> None:
    """sinfo, scontrol and squeue stand-ins first on PATH, printing what a test gives them."""
    shim = tmp_path / "shim"
    shim.mkdir()
    for name, body in (("sinfo", "printf 'n1\\n'"), ("scontrol", scontrol_body), ("squeue", squeue_body)):
        (shim / name).write_text(f"#!/bin/sh\n{body}\n")
        (shim / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}:{os.environ['PATH']}")


def test_a_runaway_scontrol_answer_is_cut_on_the_host_and_refused_in_one_line(gpudeck_home, monkeypatch, tmp_path):
    """40 MB from `scontrol show node` (past the 16 MiB cap) is one line of error, not read whole."""
    line = "NodeName=n1 State=IDLE Gres=gpu:4 Partitions=gpu X=" + "a" * 1900
    _fake_slurm(tmp_path, monkeypatch, f"yes '{line}' | head -n 21000")
    assert gpudeck("profiles", "add", "big", "--slurm").returncode == 0
    r = gpudeck("gpus", "-p", "big")
    assert r.returncode == 1, r.stdout[-300:]
    assert r.stderr == "gpudeck: big: scontrol printed more than 16 MiB; its answer was cut and is not read\n"


def test_squeue_host_lists_that_expand_past_every_placement_are_refused_in_one_line(gpudeck_home, monkeypatch,
                                                                                 tmp_path):
    """Short lines, huge expansions: 100 jobs each on n[1-4096] are 409,600 job-on-node pairs."""
    _fake_slurm(tmp_path, monkeypatch, "echo 'NodeName=n1 State=IDLE Gres=gpu:4 Partitions=gpu'",
                "i=0; while [ $i -lt 100 ]; do echo \"$i|RUNNING|n[1-4096]|x|u\"; i=$((i+1)); done")
    assert gpudeck("profiles", "add", "wide", "--slurm").returncode == 0
    r = gpudeck("gpus", "-p", "wide")
    assert r.returncode == 1
    assert r.stderr == "gpudeck: wide: squeue placed more than 262144 jobs on nodes; the answer is not read\n"
