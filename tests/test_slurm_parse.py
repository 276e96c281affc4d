"""Slurm's own outputs, saved from the test cluster (tests/fixtures/slurm), read into nodes, jobs and job ends."""
from __future__ import annotations

from pathlib import Path

import pytest

from console.slurm.ending import job_end
from console.slurm.fields import exit_code, gres_gpus, parse_record
from console.slurm.hostlist import HostlistError, expand
from console.slurm.jobs import parse_job, parse_sbatch
from console.slurm.nodes import node_state, parse_nodes, parse_squeue
from console.slurm.run import SlurmError

FIX = Path(__file__).parent / "fixtures" / "slurm"


def test_nodes_with_a_drained_node_keep_its_reason_and_gpu_counts():
    nodes = {n.name: n for n in parse_nodes((FIX / "nodes_mixed_drain.txt").read_text())}
    assert nodes["n1"].state == "drain" and nodes["n1"].raw_state == "MIXED+DRAIN"
    assert nodes["n1"].reason.startswith("bad gpu 3 [root@")
    assert (nodes["n1"].gpus_total, nodes["n1"].gpus_used, nodes["n1"].gpus_free) == (4, 2, 0)
    assert nodes["n2"].state == "mixed" and nodes["n2"].reason is None
    assert (nodes["n2"].gpus_used, nodes["n2"].gpus_free) == (3, 1)
    assert nodes["n2"].addr == "127.0.0.1" and nodes["n2"].partitions == ["gpu"]


def test_a_down_node_reads_down_with_its_reason():
    nodes = {n.name: n for n in parse_nodes((FIX / "nodes_down.txt").read_text())}
    assert nodes["n2"].state == "down" and nodes["n2"].reason.startswith("not responding")
    assert nodes["n2"].gpus_free == 0


def test_squeue_puts_running_jobs_on_their_nodes_only():
    on_node = parse_squeue((FIX / "squeue_mixed_drain.txt").read_text())
    assert on_node == {"n1": ["1"], "n2": ["2"]}  # job 3 is pending: on no node
    assert parse_squeue("5|RUNNING|n[1-2]|big|root\n") == {"n1": ["5"], "n2": ["5"]}


def test_a_running_job_from_scontrol():
    job = parse_job((FIX / "job_running.txt").read_text())
    assert (job.job_id, job.state, job.batch_host, job.nodes, job.live) == ("1", "RUNNING", "n1", ["n1"], True)
    assert job.stdout.endswith("slurm-1.out")


@pytest.mark.parametrize("raw,state", [("IDLE", "idle"), ("MIXED", "mixed"), ("ALLOCATED", "allocated"),
                                       ("IDLE+DRAIN", "drain"), ("DOWN+NOT_RESPONDING", "down"),
                                       ("IDLE*", "down"), ("DRAINED", "drain")])
def test_node_states(raw, state):
    assert node_state(raw) == state


def test_hostlists():
    assert expand("n[1-2]") == ["n1", "n2"]
    assert expand("gpu[07-09,11],login1") == ["gpu07", "gpu08", "gpu09", "gpu11", "login1"]
    assert expand("(null)") == []
    with pytest.raises(HostlistError):
        expand("n[1-999999]")
    with pytest.raises(HostlistError):
        expand("n[a-b]")


def test_gres_and_exit_codes():
    assert gres_gpus("gpu:4") == 4 and gres_gpus("gpu:h100:8(S:0-1)") == 8
    assert gres_gpus("gpu:a100:2,shard:8") == 2 and gres_gpus("(null)") is None
    assert exit_code("139:0") == (139, 0) and exit_code("0:15") == (0, 15) and exit_code("x") == (None, None)


def test_values_with_spaces_stay_whole():
    rec = parse_record("NodeName=n1 OS=Linux 6.1 #1 SMP  RealMemory=2 Reason=a=b c", free_text_last="Reason")
    assert rec == {"NodeName": "n1", "OS": "Linux 6.1 #1 SMP", "RealMemory": "2", "Reason": "a=b c"}


def test_sbatch_output():
    assert parse_sbatch("42\n") == "42" and parse_sbatch("42;cluster\n") == "42"
    with pytest.raises(SlurmError):
        parse_sbatch("sbatch: error: Batch job submission failed\n")


@pytest.mark.parametrize("state,code,ours,cls,status,stopped", [
    ("CANCELLED", (0, 15), True, "stopped", 143, True),
    ("CANCELLED", (143, 0), True, "stopped", 143, True),  # the race the issue saw
    ("CANCELLED", (0, 15), False, "cancelled", 143, False),
    ("FAILED", (139, 0), False, "segfault", 139, False),
    ("FAILED", (1, 0), False, "exit-nonzero", 1, False),
    ("TIMEOUT", (0, 9), False, "timeout", 137, False),
    ("NODE_FAIL", (0, 0), False, "node-fail", 0, False),
    ("OUT_OF_MEMORY", (0, 125), False, "out-of-memory", 253, False),
    ("COMPLETED", (0, 0), False, None, 0, False),
])
def test_job_ends(state, code, ours, cls, status, stopped):
    end = job_end(state, *code, cancelled_by_us=ours)
    assert (end.cls, end.exit_status, end.stopped_by_us) == (cls, status, stopped)
    assert end.process_facts() == {"exit_status": status, "stopped_by_operator": stopped, "ended": True}


def test_a_live_job_has_no_end():
    assert job_end("RUNNING", 0, 0, False) is None and job_end("PENDING", 0, 0, True) is None


def test_srun_reports_name_the_failing_tasks_and_nodes():
    from console.slurm.ranks import failure_class, srun_failures

    log = ("batch abc\nsrun: error: n1: task 0: Exited with exit code 1\n"
           "srun: error: n2: task 1: Segmentation fault\nsrun: error: n3: tasks 4-5,7: Killed\n")
    found = srun_failures(log)
    assert [(f.node, f.ranks, failure_class(f.what), f.line) for f in found] == [
        ("n1", [0], "exit-nonzero", 2), ("n2", [1], "segfault", 3), ("n3", [4, 5, 7], "process-killed", 4)]


def test_sbatch_directives_stop_at_the_first_command():
    from console.slurm.directives import asks_for, nodes_asked, sbatch_options

    script = ("#!/bin/bash\n# a comment\n#SBATCH -N 2 --gres=gpu:8\n#SBATCH --partition=big  # why\n"
              "#SBATCH -Adev\nsrun x\n#SBATCH -p late\n")
    tokens = sbatch_options(script)
    assert nodes_asked(tokens) == 2 and asks_for(tokens, "p", "partition") == "big"
    assert asks_for(tokens, "A", "account") == "dev" and asks_for(tokens, None, "time") is None


def test_tp16_over_nodes_of_8_gpus_is_two_nodes():
    from console.servers import configs as cfgs

    def warnings(sbatch: str, args: str) -> list[str]:
        text = f"#!/bin/bash\n{sbatch}\nsrun python -m sglang.launch_server --model-path /m {args} --port 30000\n"
        config = cfgs.ServerConfig(name="glm5-tp16", script="/s/glm5-tp16.sh", text=text)
        cfgs.parse_flags(config)
        return config.warnings

    assert warnings("#SBATCH -N 2\n#SBATCH --gres=gpu:8", "--tp 16 --nnodes 2") == []
    assert warnings("#SBATCH -N 1\n#SBATCH --gres=gpu:8", "--tp 16") == [
        "TP16 needs 16 GPUs: with 8 GPU(s) per node that is -N 2; the #SBATCH lines ask for -N 1"]
    assert warnings("#SBATCH --nodes=2\n#SBATCH --gpus-per-node=8", "--tp 16 --nnodes 1") == [
        "the server is told --nnodes 1; the #SBATCH lines ask for -N 2"]
    assert warnings("", "--tp 16") == []  # no #SBATCH lines: not a job script


def test_a_two_node_job_counts_every_nodes_gpus():
    job = parse_job((FIX / "job_two_nodes.txt").read_text())
    assert (job.nodes, job.num_nodes, job.gpus) == (["n1", "n2"], 2, 6)
    assert parse_squeue((FIX / "squeue_two_nodes.txt").read_text()) == {"n1": ["1"], "n2": ["1"]}
    assert parse_job((FIX / "job_running.txt").read_text()).gpus == 2


def test_dcgm_readings_join_the_nodes_by_host_name():
    from console.gpus.model import GPU, NA, Snapshot
    from console.slurm.live import join
    from console.slurm.nodes import Partition

    nodes = parse_nodes((FIX / "nodes_mixed_drain.txt").read_text())
    part = Partition("gpu", nodes)
    n2 = Snapshot(host="N2.cluster.example", source="dcgm", gpus=[
        GPU(index=i, util_gpu_pct=u, memory_used_mib=1024 * i, memory_total_mib=81920, xid=x)
        for i, (u, x) in enumerate([(100, 0), (50, 79), (0, 0), (10, 0)])])
    other = Snapshot(host="login1", source="dcgm", gpus=[GPU(index=0, util_gpu_pct=NA)])
    assert join(part, [n2, other]) == ["n1"]
    by = {n.name: n for n in part.nodes}
    assert by["n1"].live is None  # nothing matched: unknown, not zero
    live = by["n2"].live
    assert (live["gpus"], live["util_pct"], live["memory_used_mib"], live["xids"]) == (4, 40.0, 6144.0, [79])


@pytest.mark.parametrize("text", ["42", "4294967295", "1" * 30, "4294967296", "0", "0042", "٣", "²"])
def test_one_job_id_rule_for_sbatch_scontrol_and_the_launch_record(text):
    """A job id sbatch's answer gives is one a record keeps and scontrol's answer names: never one
    reader taking it and another refusing it (a 30-digit id left the record `launching` for good)."""
    from console.servers.launching import job_id
    from console.store.launches import LaunchRecord

    try:
        from_sbatch = parse_sbatch(f"{text}\n")
    except SlurmError:
        from_sbatch = None
    record = LaunchRecord(id="x", config="x", script=None, log=None, exit_file=None, state="launching",
                          slurm={"job_id": text})
    shown = parse_job(f"JobId={text} JobName=x JobState=RUNNING")
    accepted = {from_sbatch, job_id(record), shown.job_id if shown else None}
    assert len(accepted) == 1
    assert accepted == ({text} if text in ("42", "4294967295") else {None})


def test_a_gres_count_past_any_real_node_reads_unknown_not_as_fact():
    """`Gres=gpu:10^26` is junk (a broken plugin, a hostile answer), never 10^26 GPUs in the fleet."""
    huge = "1" + "0" * 26
    text = (f"NodeName=n1 State=IDLE Gres=gpu:{huge} GresUsed=gpu:0 Partitions=gpu\n"
            "NodeName=n2 State=IDLE Gres=gpu:h100:8(S:0-1) GresUsed=gpu:h100:²,gpu:٣ Partitions=gpu\n")
    nodes = {n.name: n for n in parse_nodes(text)}
    assert (nodes["n1"].gpus_total, nodes["n1"].gpus_free) == (None, None)
    assert nodes["n2"].gpus_total == 8
    from console.slurm.nodes import Partition

    assert Partition("gpu", list(nodes.values())).gpus_total is None
    job = parse_job(f"JobId=7 JobName=x JobState=RUNNING NumNodes=2 JOB_GRES=gpu:{huge} TresPerNode=gres:gpu:4")
    assert job.gpus is None
    assert parse_job(f"JobId=7 JobState=RUNNING NumNodes={huge} NumTasks=² TresPerNode=gres:gpu:4").num_nodes is None
    assert gres_gpus("gpu:1024") == 1024 and gres_gpus("gpu:1025") is None and gres_gpus("gpu:512,gpu:513") is None
    assert exit_code("²:0") == (None, None) and exit_code(f"{huge}:0") == (None, None)
