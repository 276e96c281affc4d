"""Launches as Slurm jobs on the real two-node test cluster: a two-rank server across n1 and n2,
a stop by scancel, a segfault, each read back through gpudeck's CLI."""
from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import pytest

from tests.cli import gpudeck
from tests.realparts import ROOT, free_port


@pytest.fixture
def cluster_profile(slurm, tmp_path):
    """A Slurm profile on this machine (the login node) with its scripts and logs in tmp_path."""
    scripts, logs = tmp_path / "scripts", tmp_path / "logs"
    scripts.mkdir()
    r = gpudeck("profiles", "add", "cluster", "--slurm", "--partition", "gpu", "--scripts-dir", str(scripts),
                "--log-dir", str(logs))
    assert r.returncode == 0, r.stderr
    return scripts, logs


def status(profile: str = "cluster") -> dict:
    r = gpudeck("server", "status", "-p", profile, "--json")
    assert r.returncode == 0, r.stderr
    return {s["config"]: s for s in json.loads(r.stdout)["servers"]}


def wait_state(config: str, states: set[str], timeout: float = 60) -> dict:
    """Until `server status` shows the config in one of `states` (each look is one CLI call)."""
    deadline = time.monotonic() + timeout
    seen = None
    while time.monotonic() < deadline:
        seen = status().get(config)
        if seen and seen["shown_state"] in states:
            return seen
        time.sleep(0.2)
    raise AssertionError(f"{config} never reached {states}: {seen and seen['shown_state']}")


def _two_rank_script(path, rank_args: str, *sbatch: str) -> int:
    """A launch script for tests/rank_server.py on two nodes, one rank each (rank 0 on the head
    serves HTTP); the port it will serve on."""
    init_port, http_port = free_port(), free_port()
    options = "".join(f"#SBATCH {o}\n" for o in ("-N 2", *sbatch))
    path.write_text(f"""#!/bin/sh
{options}head=$(scontrol show hostnames "$SLURM_JOB_NODELIST" | head -n 1)
exec srun {sys.executable} -u {ROOT / 'tests' / 'rank_server.py'} --dist-init-addr "$head:{init_port}" \\
    --port {http_port} {rank_args}
""")
    return http_port


def test_two_rank_server_across_n1_n2_gets_ready_and_a_crash_on_rank_1_is_rank_1s(cluster_profile, tmp_path):
    scripts, logs = cluster_profile
    crash = tmp_path / "crash-now"
    _two_rank_script(scripts / "tworank.sh", f"--crash-rank 1 --crash-file {crash}", "--gres=gpu:2")
    r = gpudeck("server", "launch", "tworank", "-p", "cluster", "--wait", "--timeout", "60", "--json")
    assert r.returncode == 0, r.stderr
    record = json.loads(r.stdout)
    job = record["slurm"]
    assert record["state"] == "ready" and job["nodes"] == ["n1", "n2"] and job["batch_host"] == "n1"
    assert job["gpus"] == 4  # two per node: the count a roofline of this server takes
    from console.slurm.launch import job_gpus

    assert job_gpus("cluster", "tworank") == 4
    assert [(k["rank"], k["node"], k["ready"]) for k in job["ranks"]] == [(0, "n1", True), (1, "n2", True)]
    assert Path(record["log"]).parent == logs and job["job_id"].isdigit()
    rank1 = logs / f"{record['id']}.rank1.n2.log"
    assert "joined rank 0 at n1:" in rank1.read_text()  # the real rendezvous went from n2 to n1

    logs = gpudeck("server", "logs", "tworank", "-p", "cluster", "--rank", "1", "--json")
    assert logs.returncode == 0, logs.stderr
    assert any("joined rank 0" in line for line in json.loads(logs.stdout)["lines"])

    crash.touch()
    ended = wait_state("tworank", {"crashed"})
    assert ended["crash_class"] == "segfault"
    assert (ended["slurm"]["failed_rank"], ended["slurm"]["failed_node"]) == (1, "n2")
    assert ended["slurm"]["end"]["state"] == "FAILED"
    crashes = list(Path(os.environ["GPUDECK_HOME"]).rglob(f"crashes/{ended['crash_record']}.json"))
    doc = json.loads(crashes[0].read_text())
    assert doc["class"] == "segfault" and doc["summary"].startswith("rank 1 on n2:")


def test_scancel_by_gpudeck_reads_stopped(cluster_profile, slurm):
    scripts, _ = cluster_profile
    (scripts / "idle.sh").write_text("#!/bin/sh\n#SBATCH --gres=gpu:1\necho loading model\nexec sleep 300\n")
    r = gpudeck("server", "launch", "idle", "-p", "cluster", "--json")
    assert r.returncode == 0, r.stderr
    job_id = json.loads(r.stdout)["slurm"]["job_id"]
    slurm.wait_job(job_id, {"RUNNING"})
    stopped = gpudeck("server", "stop", "idle", "-p", "cluster", "--grace", "10", "--json")
    assert stopped.returncode == 0, stopped.stderr
    doc = json.loads(stopped.stdout)
    assert doc["record"]["state"] == "stopped" and doc["how"] == "scancel"
    assert doc["record"]["slurm"]["end"]["state"] == "CANCELLED"
    assert doc["record"]["slurm"]["end"]["stopped_by_us"] is True
    assert doc["record"]["crash_class"] is None
    assert slurm.wait_job(job_id, {"CANCELLED"})["JobState"] == "CANCELLED"


def test_a_console_monitor_follows_a_job_and_a_foreign_scancel_reads_cancelled(cluster_profile, slurm):
    """The TUI's monitor on a Slurm job: a running job is loading (never taken for dead for
    having no process group here), and a scancel nobody in gpudeck asked for is `cancelled`."""
    import asyncio

    from console.store import launches
    from console.servers.monitor import ServerMonitor
    from console.session import HostSession
    from profiles import store

    scripts, _ = cluster_profile
    (scripts / "idle.sh").write_text("#!/bin/sh\necho loading model\nexec sleep 300\n")
    r = gpudeck("server", "launch", "idle", "-p", "cluster", "--json")
    assert r.returncode == 0, r.stderr
    launched = json.loads(r.stdout)

    async def follow() -> list[str]:
        session = HostSession.open(store.load("cluster"))
        record = launches.get("cluster", launched["id"])
        seen: list[str] = []
        running = asyncio.Event()

        def on_state(rec) -> None:
            seen.append(rec.state)
            if rec.state == "loading":
                running.set()

        monitor = ServerMonitor(session, record, on_state=on_state, poll_s=0.1)
        task = asyncio.create_task(monitor.run())
        await asyncio.wait_for(running.wait(), 30)
        await asyncio.to_thread(slurm.run, "scancel", record.slurm.job_id)
        await asyncio.wait_for(task, 30)
        return seen

    seen = asyncio.run(follow())
    first_run = seen.index("loading")
    assert set(seen[:first_run]) <= {"launching"} and seen[-1] == "crashed" and "crashed" not in seen[:-1]
    final = launches.get("cluster", launched["id"])
    assert final.crash_class == "cancelled" and final.slurm.end["stopped_by_us"] is False


def test_a_hostile_job_record_is_left_alone_not_a_traceback(cluster_profile, gpudeck_home):
    """A launch record whose `slurm` part is junk (wrong types, a job id that is a command) names no job."""
    from console.store import launches
    from console.store.launches import LaunchRecord

    for i, junk in enumerate(["junk", {"job_id": "1; rm -rf /"}, {"job_id": 7, "log_dir": ["x"]}]):
        launches.save("cluster", LaunchRecord(id=f"bad{i}", config=f"bad{i}", script=None, log=None, exit_file=None,
                                             state="loading", slurm=junk))
    r = gpudeck("server", "status", "-p", "cluster", "--json")
    assert r.returncode == 0, r.stderr
    assert {s["config"]: s["state"] for s in json.loads(r.stdout)["servers"]} == {
        "bad0": "loading", "bad1": "loading", "bad2": "loading"}
    stop = gpudeck("server", "stop", "bad1", "-p", "cluster")
    assert stop.returncode == 1 and "no Slurm job id" in stop.stderr and len(stop.stderr.splitlines()) == 1


def test_the_tunnel_for_a_jobs_port_leads_to_its_head_node(gpudeck_home):
    from console.store import launches
    from console.store.launches import LaunchRecord
    from console.slurm.launch import head_for_port

    launches.save("cluster", LaunchRecord(id="j", config="j", script=None, log=None, exit_file=None, state="ready",
                                         port=30000, slurm={"job_id": "12", "head_addr": "10.1.2.3"}))
    launches.save("cluster", LaunchRecord(id="k", config="k", script=None, log=None, exit_file=None, state="stopped",
                                         port=30001, slurm={"job_id": "13", "head_addr": "10.1.2.4"}))
    assert head_for_port("cluster", 30000) == "10.1.2.3"
    assert head_for_port("cluster", 30001) is None and head_for_port("cluster", 9) is None


def _fail_node(slurm, node: str):
    slurm.run("scontrol", "update", f"nodename={node}", "state=down", "reason=gpudeck test: node failure")


def test_a_node_failing_under_a_job_reads_node_fail_and_a_requeued_job_starts_over(cluster_profile, slurm):
    scripts, _ = cluster_profile
    (scripts / "once.sh").write_text("#!/bin/sh\n#SBATCH -w n2\n#SBATCH --no-requeue\necho loading model\n"
                                     "exec sleep 300\n")
    (scripts / "again.sh").write_text("#!/bin/sh\n#SBATCH -w n1\necho loading model\nexec sleep 300\n")
    once = json.loads(gpudeck("server", "launch", "once", "-p", "cluster", "--json").stdout)
    again = json.loads(gpudeck("server", "launch", "again", "-p", "cluster", "--json").stdout)
    try:
        for launched in (once, again):
            slurm.wait_job(launched["slurm"]["job_id"], {"RUNNING"})
        assert {wait_state(n, {"loading"})["config"] for n in ("once", "again")} == {"once", "again"}
        _fail_node(slurm, "n2")
        _fail_node(slurm, "n1")
        ended = wait_state("once", {"crashed"})
        assert ended["crash_class"] == "node-fail" and ended["slurm"]["end"]["state"] == "NODE_FAIL"
        assert ended["slurm"]["failed_node"] == "n2"
        requeued = wait_state("again", {"launching"})
        assert requeued["slurm"]["restarts"] == 1 and requeued["ready_at"] is None
    finally:
        slurm.run("scancel", again["slurm"]["job_id"], check=False)
        slurm.run("scontrol", "update", "nodename=n1,n2", "state=resume", check=False)
        slurm.run("scontrol", "update", "nodename=n1", "state=resume", check=False)
        slurm.run("scontrol", "update", "nodename=n2", "state=resume", check=False)
        slurm.wait_nodes_idle()


def test_readiness_waits_for_every_rank_not_only_the_head(cluster_profile, slurm, tmp_path):
    """Rank 0 serves /health while rank 1 is still loading: the launch is not ready until rank 1 is."""
    import httpx

    scripts, logs = cluster_profile
    late = tmp_path / "rank1-may-finish"
    http_port = _two_rank_script(scripts / "late.sh", f"--late-rank 1 --late-file {late}")
    r = gpudeck("server", "launch", "late", "-p", "cluster", "--json")
    assert r.returncode == 0, r.stderr
    launched = json.loads(r.stdout)
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:  # the head answers: rank 0 is up
            try:
                if httpx.get(f"http://127.0.0.1:{http_port}/health", timeout=1).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            time.sleep(0.1)
        else:
            raise AssertionError("rank 0 never served /health")
        rank1 = logs / f"{launched['id']}.rank1.n2.log"
        assert "loading model shards" in rank1.read_text()
        seen = status()["late"]
        assert seen["state"] == "loading"
        assert [(k["rank"], k["ready"]) for k in seen["slurm"]["ranks"]] == [(0, True), (1, False)]
        late.touch()
        assert wait_state("late", {"ready"})["slurm"]["ranks"][1]["ready"] is True
    finally:
        gpudeck("server", "stop", "late", "-p", "cluster", "--grace", "5")


@pytest.mark.parametrize("name, body, exit_status, crash_class", [
    ("segv", f"{sys.executable} -c 'import os, signal; os.kill(os.getpid(), signal.SIGSEGV)'\n", 139, "segfault"),
    ("boom", f"{sys.executable} -c 'raise RuntimeError(\"weights missing\")'\nexit 1\n", 1, "python-exception"),
], ids=["killed-by-sigsegv-reads-segfault", "exit-1-after-a-traceback-takes-the-logs-class"])
def test_a_failed_job_reads_as_its_class(cluster_profile, name, body, exit_status, crash_class):
    scripts, _ = cluster_profile
    (scripts / f"{name}.sh").write_text(f"#!/bin/sh\necho loading model\n{body}")
    r = gpudeck("server", "launch", name, "-p", "cluster", "--wait", "--timeout", "60", "--json")
    assert r.returncode == 1, r.stderr
    record = json.loads(r.stdout)
    assert record["state"] == "crashed" and record["crash_class"] == crash_class
    assert record["slurm"]["end"]["state"] == "FAILED" and record["exit_status"] == exit_status


def test_status_names_the_job_its_nodes_and_the_failing_rank(cluster_profile, gpudeck_home):
    from console.store import launches
    from console.store.launches import LaunchRecord

    launches.save("cluster", LaunchRecord(id="x", config="x", script=None, log="/l", exit_file=None, state="crashed",
                                         crash_class="segfault", crash_record="x", slurm={"job_id": "42", "state": "FAILED",
                                                                        "nodes": ["n1", "n2"], "failed_rank": 1,
                                                                        "failed_node": "n2"}))
    r = gpudeck("server", "status", "-p", "cluster")
    assert "job 42 (FAILED) on n1,n2 · rank 1 on n2" in r.stdout and "segfault" in r.stdout


def test_the_consoles_runtime_launches_and_stops_a_job(cluster_profile, slurm):
    """What the Server tab calls: HostRuntime.launch submits a job, its monitor follows it, stop is scancel."""
    import asyncio

    from console.runtime import events as ev
    from console.runtime.host_runtime import HostRuntime
    from console.servers import configs as cfgs
    from console.session import HostSession
    from profiles import store

    scripts, _ = cluster_profile
    (scripts / "tab.sh").write_text("#!/bin/sh\n#SBATCH --gres=gpu:1\necho loading model\nexec sleep 300\n")

    async def go():
        runtime = HostRuntime(HostSession.open(store.load("cluster")))
        running = asyncio.Event()
        runtime.subscribe(lambda e: running.set() if isinstance(e, ev.ServerStateChanged)
                          and e.record.state == "loading" else None)
        try:
            config = cfgs.find(await cfgs.discover(runtime.session), "tab")
            record = await runtime.launch(config)
            await asyncio.wait_for(running.wait(), 30)
            result = await runtime.stop(record)
            return record, result
        finally:
            await runtime.close()

    record, result = asyncio.run(go())
    assert result.how == "scancel" and record.state == "stopped"
    assert record.slurm.end["state"] == "CANCELLED" and record.slurm.end["stopped_by_us"]


def _foreign_job(slurm, *sbatch: str) -> str:
    """A job gpudeck did not start, running, as the one a reused job id now names."""
    job = slurm.run("sbatch", "--parsable", "-o", "/dev/null", *sbatch, "--wrap", "sleep 300").stdout.strip()
    slurm.wait_job(job, {"RUNNING"})
    return job


def _record_on(job: str, logs, owner: dict | None, config: str = "run_a") -> None:
    """A launch record of config run_a whose job id is `job`, as gpudeck saves one (`owner` None: as
    records were saved before the launch id went into the job's comment)."""
    from console.store import launches
    from console.store.launches import LaunchRecord

    part = {"job_id": job, "state": "RUNNING", "nodes": ["n1"], "batch_host": "n1", "head_addr": None,
            "log_dir": str(logs), "ranks": [], "end": None, "failed_rank": None, "failed_node": None}
    if owner is not None:
        part["owner"] = owner
    launches.save("cluster", LaunchRecord(id=f"{config}-1", config=config, script=None,
                                          log=str(logs / f"{config}-1.log"), exit_file=None, state="loading",
                                          slurm=part))


def _stop_in_process() -> str:
    """What the Server tab and a campaign call: lifecycle.stop on the record as saved, no refresh first."""
    import asyncio

    from console.servers import lifecycle
    from console.session import HostSession
    from console.store import launches
    from profiles import store

    async def go() -> str:
        session = HostSession.open(store.load("cluster"))
        try:
            await lifecycle.stop(session, launches.get("cluster", "run_a-1"), grace_s=1)
        except lifecycle.LaunchError as exc:
            return str(exc)
        finally:
            await session.host.close()
        return "stopped"

    return asyncio.run(go())


MINE = {"name": "gpudeck-run_a", "user": "root", "comment": "gpudeck-launch:run_a-1"}


@pytest.mark.parametrize("sbatch, owner", [
    (("--job-name=alice-pretrain", "--comment=gpudeck-launch:run_a-1"), MINE),
    (("--job-name=gpudeck-run_a", "--comment=gpudeck-launch:run_a-1"), MINE | {"user": "alice"}),
    (("--job-name=gpudeck-run_a", "--comment=gpudeck-launch:run_a-0"), MINE),
    (("--job-name=gpudeck-run_a",), MINE),
], ids=["another-name", "another-user", "another-launch-id", "no-launch-id"])
def test_a_job_id_that_now_names_another_job_is_not_ours_and_nothing_is_signalled(cluster_profile, slurm, sbatch,
                                                                                  owner):
    """Job ids come round again: the id a record keeps names someone else's job. Neither a stop nor a
    look reads it as the launch's server, and the other job runs on untouched."""
    _, logs = cluster_profile
    job = _foreign_job(slurm, *sbatch)
    try:
        _record_on(job, logs, owner)
        refused = _stop_in_process()
        assert refused.startswith(f"run_a: nothing signalled: job {job} is not this launch's: job id reused by "
                                  "another job (JobName="), refused
        assert slurm.wait_job(job, {"RUNNING"})["JobState"] == "RUNNING"
        shown = status()["run_a"]
        assert shown["shown_state"] == "crashed" and shown["crash_class"] == "unknown"
        assert shown["slurm"]["reused"].startswith("job id reused by another job")
        text = gpudeck("server", "status", "-p", "cluster").stdout
        assert f"job {job} (UNKNOWN) on n1 · job id reused by another job (JobName=" in text, text
        stop = gpudeck("server", "stop", "run_a", "-p", "cluster", "--grace", "1")
        assert stop.returncode == 1
        assert slurm.wait_job(job, {"RUNNING"})["JobState"] == "RUNNING"
    finally:
        slurm.run("scancel", job, check=False)


def test_a_record_from_before_the_launch_id_keeps_its_job_by_name_and_user_and_no_other(cluster_profile, slurm):
    """Records saved before gpudeck put the launch id into the job: a job with the config's job name
    and the login user's is still the launch's (shown, stopped); the comment is not asked of it.
    Another job under such a record's id is not."""
    _, logs = cluster_profile
    job, other = _foreign_job(slurm, "--job-name=gpudeck-run_a"), _foreign_job(slurm, "--job-name=alice-pretrain")
    try:
        _record_on(job, logs, None)
        _record_on(other, logs, None, config="run_b")
        shown = status()
        assert shown["run_a"]["shown_state"] == "loading"
        assert shown["run_b"]["slurm"]["reused"] == "job id reused by another job (JobName=alice-pretrain, UserId=root)"
        assert _stop_in_process() == "stopped"
        assert slurm.wait_job(job, {"CANCELLED"})["JobState"] == "CANCELLED"
        assert status()["run_a"]["shown_state"] == "stopped"
        assert slurm.wait_job(other, {"RUNNING"})["JobState"] == "RUNNING"
    finally:
        slurm.run("scancel", job, other, check=False)


def test_a_job_name_that_spells_another_user_is_never_read_as_ours():
    """A name holding ` UserId=root(0) Comment=...` puts those keys twice on scontrol's line."""
    from console.slurm.jobs import parse_job
    from console.slurm.ownership import foreign
    from console.store.launches import LaunchRecord

    record = LaunchRecord(id="run_a-1", config="run_a", script=None, log=None, exit_file=None, state="loading",
                          slurm={"job_id": "7", "owner": MINE})
    forged = parse_job("JobId=7 JobName=gpudeck-run_a UserId=root(0) Comment=gpudeck-launch:run_a-1 "
                       "UserId=alice(1001) GroupId=alice(1001) JobState=RUNNING")
    assert foreign(record, forged, "root").startswith("job id reused by another job")
    honest = parse_job("JobId=7 JobName=gpudeck-run_a UserId=root(0) GroupId=root(0) JobState=RUNNING "
                       "Comment=gpudeck-launch:run_a-1")
    assert foreign(record, honest, "root") is None


@pytest.fixture
def scancel_ignored(slurm, tmp_path, monkeypatch):
    """gpudeck's `scancel` goes through a stand-in first on PATH: while the returned flag file exists
    it exits 0 and does nothing (a cancel Slurm accepts that never takes), else it is the real one."""
    shim, flag = tmp_path / "shim", tmp_path / "scancel-ignored"
    shim.mkdir()
    (shim / "scancel").write_text(f'#!/bin/sh\n[ -e "{flag}" ] && exit 0\nexec {slurm.bins["scancel"]} "$@"\n')
    (shim / "scancel").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    flag.touch()
    return flag


# The CLI with one second, not a minute, between the SIGKILL and calling the job still running.
SHORT_KILL_WAIT = "import console.slurm.launch as launch; launch.KILL_WAIT_S = 1.0"


def test_a_stop_slurm_does_not_carry_out_reads_still_running_and_fails(cluster_profile, slurm, scancel_ignored):
    scripts, _ = cluster_profile
    (scripts / "idle.sh").write_text("#!/bin/sh\necho loading model\nexec sleep 300\n")
    r = gpudeck("server", "launch", "idle", "-p", "cluster", "--json")
    assert r.returncode == 0, r.stderr
    job = json.loads(r.stdout)["slurm"]["job_id"]
    try:
        slurm.wait_job(job, {"RUNNING"})
        stop = gpudeck("server", "stop", "idle", "-p", "cluster", "--grace", "1", setup=SHORT_KILL_WAIT, timeout=300)
        assert stop.returncode == 1, stop.stdout + stop.stderr
        assert stop.stdout.startswith(f"stop asked, still running: idle (job {job} ")
        assert stop.stdout.rstrip().endswith("still RUNNING after scancel and SIGKILL")
        assert f"⚠ job {job} still RUNNING after scancel and SIGKILL" in stop.stderr
        shown = status()["idle"]
        assert (shown["shown_state"], shown["slurm"]["state"]) == ("stopping", "RUNNING")
        assert slurm.wait_job(job, {"RUNNING"})["JobState"] == "RUNNING"

        scancel_ignored.unlink()   # the cancel takes now: the same stop ends it, and only then reads stopped
        again = gpudeck("server", "stop", "idle", "-p", "cluster", "--grace", "5", "--json")
        assert again.returncode == 0, again.stderr
        assert json.loads(again.stdout)["record"]["state"] == "stopped" and json.loads(again.stdout)["running"] is None
    finally:
        slurm.run(slurm.bins["scancel"], job, check=False)


def test_a_campaign_goes_no_further_than_a_cell_whose_job_outlives_its_stop(cluster_profile, slurm, scancel_ignored,
                                                                             tmp_path):
    """Cell a never gets ready, so the campaign stops its job; the stop does not take. Cell b is never
    launched (onto GPUs job a still holds) and the campaign fails, naming the job."""
    from console.store import launches
    from profiles import store

    scripts, _ = cluster_profile
    profile = store.load("cluster")
    profile.server.kill_grace_s = 1.0
    store.save(profile)
    server = tmp_path / "llama-server"   # a server that loads for good: never ready
    server.write_text("#!/bin/sh\necho loading model\nexec sleep 300\n")
    server.chmod(0o755)
    for name in ("a", "b"):
        (scripts / f"{name}.sh").write_text(f"#!/bin/sh\n#SBATCH --gres=gpu:4\n"
                                            f"exec {server} -m /m --port {free_port()}\n")
    campaign = tmp_path / "campaign.toml"
    campaign.write_text("[sweep]\nlevels = [1]\ninput_len = 16\noutput_len = 8\nnum_prompts = 2\n"
                        "url = \"http://127.0.0.1:9\"\n\n"
                        '[[config]]\nname = "a"\n\n[[config]]\nname = "b"\n\n'
                        "[policy]\nready_timeout_s = 3\n")
    try:
        run = gpudeck("campaign", "run", str(campaign), "-p", "cluster", "--foreground", "--json",
                      setup=SHORT_KILL_WAIT, timeout=300)
        assert run.returncode != 0 or json.loads(run.stdout)["status"] == "failed", run.stderr[-2000:]
        doc = json.loads(run.stdout)
        assert doc["status"] == "failed" and "stop asked, still running" in doc["note"]
        cells = {c["name"]: c for c in doc["cells"]}
        assert cells["a"]["status"] == "interrupted" and "still RUNNING after scancel" in cells["a"]["note"]
        assert cells["b"]["status"] == "queued" and cells["b"]["attempts"] == 0
        jobs = launches.load_all("cluster")
        assert [r.config for r in jobs] == ["a"] and jobs[0].state == "stopping"
        assert slurm.wait_job(jobs[0].slurm.job_id, {"RUNNING"})["JobState"] == "RUNNING"
    finally:
        scancel_ignored.unlink(missing_ok=True)
        for record in launches.load_all("cluster"):
            slurm.run(slurm.bins["scancel"], record.slurm.job_id, check=False)
