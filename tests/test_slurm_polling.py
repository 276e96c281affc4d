"""The console follows Slurm jobs to their end, also across a time Slurm does not answer, and reads
the end of a job the controller has forgotten from accounting.

Real two-node cluster (tests/slurm_part.py). gpudeck's `scontrol` goes
through a shim first on PATH: it fails while a flag file exists (as a
client does when slurmctld is down) and says `Invalid job id specified` for
the jobs listed as forgotten (as past MinJobAge); the test's own looks at
the cluster use the real binary. The cluster keeps no accounting, so for
jobs listed as accounted a `sacct` shim answers as sacct does on a cluster
that does, from the controller's own record of the job; for any other job
the real `sacct` runs (and says accounting is disabled).
"""
from __future__ import annotations

import asyncio
import json
import os
import shutil

import pytest
from tests.cli import gpudeck

SHIM_SAYS = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


@pytest.fixture
def cluster(slurm, tmp_path, monkeypatch):
    """A Slurm profile `cluster`; the files that put Slurm out of reach (`down`), make the controller
    forget jobs (`forgotten`) and give jobs an accounting record (`accounted`), for gpudeck alone."""
    scripts, logs, shim = tmp_path / "scripts", tmp_path / "logs", tmp_path / "shim"
    scripts.mkdir()
    shim.mkdir()
    r = gpudeck("profiles", "add", "cluster", "--slurm", "--partition", "gpu", "--scripts-dir", str(scripts),
                "--log-dir", str(logs))
    assert r.returncode == 0, r.stderr
    down, forgotten, accounted = tmp_path / "slurm-down", tmp_path / "forgotten", tmp_path / "accounted"
    forgotten.write_text("")
    accounted.write_text("")
    scontrol = slurm.bins["scontrol"]
    (shim / "scontrol").write_text(f"""#!/bin/sh
if [ -e "{down}" ]; then echo "{SHIM_SAYS}" >&2; exit 1; fi
eval "last=\\${{$#}}"
if [ "$1 $2" = "show job" ] && grep -qx "$last" "{forgotten}"; then
  echo "slurm_load_jobs error: Invalid job id specified" >&2; exit 1
fi
exec {scontrol} "$@"
""")
    sacct = shutil.which("sacct") or "/usr/bin/sacct"
    (shim / "sacct").write_text(f"""#!/bin/sh
job=$2
if [ "$1" = -j ] && grep -qx "$job" "{accounted}"; then
  rec=$({scontrol} show job -o "$job")
  state=$(printf '%s\\n' "$rec" | tr ' ' '\\n' | sed -n 's/^JobState=//p')
  code=$(printf '%s\\n' "$rec" | tr ' ' '\\n' | sed -n 's/^ExitCode=//p')
  user=$(printf '%s\\n' "$rec" | tr ' ' '\\n' | sed -n 's/^UserId=\\([^(]*\\)(.*/\\1/p')
  name=$(printf '%s\\n' "$rec" | tr ' ' '\\n' | sed -n 's/^JobName=//p')
  echo "$job|$state|$code|$user|$name"; exit 0
fi
exec {sacct} "$@"
""")
    for name in ("scontrol", "sacct"):
        (shim / name).chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return scripts, down, forgotten, accounted


def job_fields(slurm, job_id: str) -> dict[str, str]:
    """The job as the real `scontrol` shows it (not through the shim)."""
    out = slurm.run(slurm.bins["scontrol"], "show", "job", "-o", job_id, check=False)
    return dict(tok.split("=", 1) for tok in out.stdout.split() if "=" in tok)


def job_state(slurm, job_id: str) -> str:
    return job_fields(slurm, job_id).get("JobState", "")


async def until(test, timeout: float = 30.0) -> None:
    """Until `test()` holds (each look is a Slurm or file read, not a clock assertion)."""
    async with asyncio.timeout(timeout):
        while not await asyncio.to_thread(test):
            await asyncio.sleep(0.1)


def test_jobs_that_end_while_slurm_does_not_answer_are_read_once_it_does(cluster, slurm, tmp_path):
    from console.runtime import events as ev
    from console.runtime.host_runtime import HostRuntime
    from console.session import HostSession
    from console.store import launches
    from profiles import store

    scripts, down, _forgotten, _accounted = cluster
    go = tmp_path / "go"
    (scripts / "short.sh").write_text(f"#!/bin/sh\necho loading model\n"
                                      f"while [ ! -e {go} ]; do sleep 0.1; done\nexit 3\n")
    (scripts / "idle.sh").write_text("#!/bin/sh\necho loading model\nexec sleep 300\n")
    ids = {}
    for name in ("short", "idle"):
        r = gpudeck("server", "launch", name, "-p", "cluster", "--json")
        assert r.returncode == 0, r.stderr
        ids[name] = json.loads(r.stdout)["slurm"]["job_id"]
    for job in ids.values():
        asyncio.run(until(lambda job=job: job_state(slurm, job) == "RUNNING"))

    down.touch()   # from here gpudeck's scontrol fails, as with slurmctld down

    async def go_on() -> dict:
        runtime = HostRuntime(HostSession.open(store.load("cluster")), monitor_poll_s=0.2)
        ended: dict[str, asyncio.Event] = {"short": asyncio.Event(), "idle": asyncio.Event()}
        runtime.subscribe(lambda e: ended[e.record.config].set()
                          if isinstance(e, ev.ServerStateChanged) and e.record.config in ended
                          and not e.record.live else None)
        try:
            await runtime.start(gpus=False, servers=True, watch=False)
            await until(lambda: len(runtime.monitors) == 2)   # both watched, though Slurm did not answer
            shown = {r.config: r.shown_state for r in launches.load_all("cluster")}
            status = gpudeck("server", "status", "-p", "cluster")
            # both jobs end while Slurm does not answer: one by itself, one by someone else's scancel
            go.touch()
            slurm.run(slurm.bins["scancel"], ids["idle"])
            await until(lambda: job_state(slurm, ids["short"]) == "FAILED"
                        and job_state(slurm, ids["idle"]) == "CANCELLED")
            still = {r.config: r.shown_state for r in launches.load_all("cluster")}
            down.unlink()
            await asyncio.wait_for(asyncio.gather(*(e.wait() for e in ended.values())), 30)
            return {"shown": shown, "status": status, "still": still}
        finally:
            await runtime.close()

    seen = asyncio.run(go_on())
    status, sig = (int(v) for v in job_fields(slurm, ids["idle"])["ExitCode"].split(":"))
    assert seen["shown"] == {"short": "unknown", "idle": "unknown"}
    assert seen["still"] == {"short": "unknown", "idle": "unknown"}          # never taken for ended
    assert seen["status"].stdout.count(" unknown ") == 2 and SHIM_SAYS in seen["status"].stdout
    short, idle = (launches.latest_per_config("cluster")[c] for c in ("short", "idle"))
    assert short.state == "crashed" and short.exit_status == 3
    assert short.slurm.end["state"] == "FAILED" and short.slurm.unanswered is None
    assert idle.state == "crashed" and idle.crash_class == "cancelled"
    assert idle.slurm.end["state"] == "CANCELLED" and idle.slurm.end["stopped_by_us"] is False
    # Slurm's own ExitCode for the cancelled job (0:15 or 0:0, as its cancel raced the node), in shell form
    assert idle.exit_status == (128 + sig if sig else status) and idle.slurm.end["signal"] == (sig or None)


def test_a_job_the_controller_has_forgotten_is_read_from_accounting(cluster, slurm):
    """Both jobs ended while no console looked; by the next look the controller has forgotten them.
    With accounting, the clean exit reads stopped with status 0; without, the end stays unknown."""
    from console.store import launches

    scripts, _down, forgotten, accounted = cluster
    ids = {}
    for name in ("clean", "unaccounted"):
        (scripts / f"{name}.sh").write_text("#!/bin/sh\necho loading model\nexit 0\n")
        r = gpudeck("server", "launch", name, "-p", "cluster", "--json")
        assert r.returncode == 0, r.stderr
        ids[name] = json.loads(r.stdout)["slurm"]["job_id"]
    for job in ids.values():
        asyncio.run(until(lambda job=job: job_state(slurm, job) == "COMPLETED"))
    forgotten.write_text("".join(f"{job}\n" for job in ids.values()))
    accounted.write_text(f"{ids['clean']}\n")

    r = gpudeck("server", "status", "-p", "cluster", "--json")
    assert r.returncode == 0, r.stderr
    shown = {s["config"]: s for s in json.loads(r.stdout)["servers"]}
    clean, unaccounted = shown["clean"], shown["unaccounted"]
    assert clean["shown_state"] == "stopped" and clean["exit_status"] == 0 and clean["crash_class"] is None
    assert clean["slurm"]["end"]["state"] == "COMPLETED"
    assert unaccounted["shown_state"] == "crashed" and unaccounted["crash_class"] == "unknown"
    assert unaccounted["slurm"]["end"]["state"] == "UNKNOWN"
    assert launches.latest_per_config("cluster")["clean"].state == "stopped"


def test_sacct_lines_are_read_strictly():
    from console.slurm.accounting import AccountedEnd, parse_sacct

    assert parse_sacct("12|CANCELLED by 1000|0:15\n", "12") == AccountedEnd("CANCELLED", 0, 15)
    assert parse_sacct("12.batch|FAILED|1:0\n12|FAILED|1:0\n", "12") == AccountedEnd("FAILED", 1, 0)
    assert parse_sacct("12|OUT_OF_MEMORY|0:125", "12") == AccountedEnd("OUT_OF_MEMORY", 0, 125)
    assert parse_sacct("12|COMPLETED|junk", "12") == AccountedEnd("COMPLETED", None, None)
    assert parse_sacct("13|COMPLETED|0:0", "12") is None                  # another job's line
    assert parse_sacct("12|$(reboot)|0:0", "12") is None                   # not a state
    assert parse_sacct("", "12") is None and parse_sacct("12|COMPLETED", "12") is None


def test_accounting_of_a_job_id_named_twice_gives_our_jobs_end_not_the_others():
    """After the ids came round again accounting holds two jobs under one id: alice's first."""
    from console.slurm.accounting import AccountedEnd, parse_sacct

    both = "12|FAILED|1:0|alice|alice-pretrain\n12|CANCELLED by 0|0:15|root|gpudeck-run_a\n"
    assert parse_sacct(both, "12", "gpudeck-run_a", "root") == AccountedEnd("CANCELLED", 0, 15)
    assert parse_sacct(both, "12", "gpudeck-run_b", "root") is None
    assert parse_sacct("12|COMPLETED|0:0|root|a|b\n", "12", "a|b", "root") == AccountedEnd("COMPLETED", 0, 0)


def test_a_live_state_written_in_another_case_keeps_the_job_live(monkeypatch):
    """`JobState=running` is no live state to JobInfo.live but is one to job_end (it reads any case):
    the job was handed on as ended with no end, and the refresh failed on None."""
    from types import SimpleNamespace

    from console.slurm import launch
    from console.slurm.jobs import JobInfo
    from console.store.launches import LaunchRecord
    from console.store.slurm_job import SlurmJob

    record = LaunchRecord(id="run-1", config="run", script="/scripts/run.sh", log="/logs/run-1.log", exit_file=None,
                          state="loading")
    record.slurm = SlurmJob.from_json({"job_id": "42", "state": "RUNNING", "nodes": ["n1"], "ranks": [], "end": None})
    job = JobInfo(job_id="42", state="running", reason=None, exit_status=None, exit_signal=None, nodes=["n1"],
                  batch_host="n1", num_nodes=1, num_tasks=1, stdout=None)

    async def shown(host, job_id):
        return job

    async def ours(session, record, job):
        return None

    monkeypatch.setattr(launch, "show_job", shown)
    monkeypatch.setattr(launch, "_not_ours", ours)
    asyncio.run(launch.refresh(SimpleNamespace(name="cluster", host=None), record))
    assert record.live and record.state == "loading" and record.slurm.end is None
