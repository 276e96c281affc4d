"""The test cluster itself: two nodes named n1 and n2 with their GPUs, and a stop that leaves nothing."""
from __future__ import annotations

from tests.slurm_part import SlurmCluster


def test_a_two_node_job_runs_on_n1_and_n2_with_gpus_and_a_stop_leaves_no_process(tmp_path):
    cluster = SlurmCluster(tmp_path / "c").start()
    try:
        out = tmp_path / "c" / "jobs" / "out-%t.log"
        job = cluster.run("sbatch", "--parsable", "-N", "2", "--gres=gpu:2", "-o", str(tmp_path / "batch.log"),
                          "--wrap", f"srun -o {out} sh -c 'echo $(hostname) $CUDA_VISIBLE_DEVICES'").stdout.strip()
        assert cluster.wait_job(job, {"COMPLETED", "FAILED"})["JobState"] == "COMPLETED"
        lines = sorted((tmp_path / "c" / "jobs" / f"out-{t}.log").read_text().strip() for t in (0, 1))
        assert lines == ["n1 0,1", "n2 0,1"]
        running = cluster.run("sbatch", "--parsable", "-o", "/dev/null", "--wrap", "sleep 300").stdout.strip()
        cluster.wait_job(running, {"RUNNING"})
        assert cluster.leftovers()  # the job's processes carry the cluster's mark
    finally:
        cluster.stop()
    assert cluster.leftovers() == []
