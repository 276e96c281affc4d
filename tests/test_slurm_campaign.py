"""A campaign on the real two-node Slurm cluster: four llama.cpp cells, two at a time, one job per node."""
from __future__ import annotations

import json
import os
import shlex

from tests.cli import gpudeck
from tests.realparts import free_port, llama_server_binary, smollm_model


def most_at_once(cells: list[dict]) -> int:
    """The most cells whose [started, ended] spans overlap at one moment."""
    edges = sorted([(c["started_at"], 1) for c in cells] + [(c["ended_at"], -1) for c in cells])
    now = top = 0
    for _, step in edges:
        now += step
        top = max(top, now)
    return top


def llama_campaign(tmp_path, names: list[str], prompts: int = 2):
    """A Slurm profile with one llama.cpp script per name (each its own port) and a campaign over them."""
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    for name in names:  # all four GPUs of a node each: Slurm puts two jobs on two nodes, the others wait
        (scripts / f"{name}.sh").write_text(
            "#!/bin/sh\n#SBATCH --gres=gpu:4\n"
            f"exec {shlex.quote(str(llama_server_binary()))} -m {shlex.quote(str(smollm_model()))} "
            f"--host 127.0.0.1 --port {free_port()} -c 512 -t 1 --parallel 1\n")
    assert gpudeck("profiles", "add", "cluster", "--slurm", "--partition", "gpu", "--scripts-dir", str(scripts),
                   "--log-dir", str(tmp_path / "logs"), timeout=300).returncode == 0
    campaign = tmp_path / "campaign.toml"
    campaign.write_text(f"[sweep]\nlevels = [1]\ninput_len = 16\noutput_len = 8\nnum_prompts = {prompts}\nrepeats = 1\n\n"
                        + "".join(f'[[config]]\nname = "{n}"\n\n' for n in names)
                        + "[policy]\nparallel = 2\nready_timeout_s = 120\n")
    return campaign


def test_four_llama_cells_run_two_at_a_time_on_n1_and_n2(slurm, tmp_path):
    names = ["a", "b", "c", "d"]
    campaign = llama_campaign(tmp_path, names)
    out = gpudeck("campaign", "run", str(campaign), "-p", "cluster", "--foreground", "--json", timeout=300)
    assert out.returncode == 0, out.stderr[-3000:]
    doc = json.loads(out.stdout)
    assert doc["status"] == "finished"
    cells = doc["cells"]
    assert [c["name"] for c in cells] == names
    for cell in cells:
        assert cell["status"] == "done", cell
        assert cell["levels"][0]["status"] == "ok" and cell["levels"][0]["output_throughput"] > 0
        assert cell["node"] in ("n1", "n2") and cell["run_id"]
    assert {c["node"] for c in cells} == {"n1", "n2"}
    assert most_at_once(cells) == 2
    from console.store import launches

    jobs = [r for r in launches.load_all("cluster")]
    assert len(jobs) == 4 and all(r.state == "stopped" and r.slurm.end["state"] == "CANCELLED" for r in jobs)


def test_resume_after_kill_9_cancels_the_running_jobs_by_their_ids_and_redoes_their_cells(slurm, tmp_path):
    import signal
    import time

    from console.store import campaigns as st
    from console.store import launches

    started = gpudeck("campaign", "run", str(llama_campaign(tmp_path, ["a", "b"], prompts=16)), "-p", "cluster",
                      "--json", timeout=300)
    assert started.returncode == 0, started.stderr
    info = json.loads(started.stdout)

    def both_running() -> list:
        try:
            cells = st.load("cluster", info["id"]).cells
        except ValueError:
            return []
        found = [launches.get("cluster", c.launch_id) for c in cells if c.launch_id and c.status == "sweeping"]
        return found if len(found) == 2 else []

    deadline = time.monotonic() + 120
    while not both_running() and time.monotonic() < deadline:
        time.sleep(0.2)
    jobs = both_running()
    assert jobs, "the two cells never swept at once"
    os.kill(info["driver_pid"], signal.SIGKILL)
    ids = [r.slurm.job_id for r in jobs]
    assert all(slurm.wait_job(i, {"RUNNING"})["JobState"] == "RUNNING" for i in ids)  # orphaned, still running

    resumed = gpudeck("campaign", "resume", info["id"], "-p", "cluster", "--foreground", "--json", timeout=300)
    assert resumed.returncode == 0, resumed.stderr[-3000:]
    doc = json.loads(resumed.stdout)
    assert [(c["status"], c["attempts"]) for c in doc["cells"]] == [("done", 2), ("done", 2)]
    for old in ids:  # found by id and cancelled by gpudeck: stopped, not crashed
        assert slurm.wait_job(old, {"CANCELLED"})["JobState"] == "CANCELLED"
    old_records = [launches.get("cluster", r.id) for r in jobs]
    assert all(r.state == "stopped" and r.slurm.end["stopped_by_us"] for r in old_records)
