"""The console's runtime follows Slurm jobs to their end, also across a time Slurm does not answer.

Real two-node cluster (tests/slurm_part.py). `scontrol` is put out of reach
for gpudeck alone by a shim first on PATH that fails while a flag file
exists (as a client does when slurmctld is down); the test's own looks at
the cluster use the real binary. While Slurm does not answer, a live job is
`unknown` (never `stopped`); once it answers, the runtime's monitors read how
each job ended: one that exited with status 3, one cancelled by someone else.
"""
from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys

import pytest

SHIM_SAYS = "slurm_load_jobs error: Unable to contact slurm controller (connect failure)"


def gpudeck(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "console", *args], capture_output=True, text=True,
                          env=dict(os.environ), timeout=120, stdin=subprocess.DEVNULL)


@pytest.fixture
def cluster(slurm, tmp_path, monkeypatch):
    """A Slurm profile `cluster`, and a flag file that makes gpudeck's `scontrol` fail while it exists."""
    scripts, logs, shim = tmp_path / "scripts", tmp_path / "logs", tmp_path / "shim"
    scripts.mkdir()
    shim.mkdir()
    r = gpudeck("profiles", "add", "cluster", "--slurm", "--partition", "gpu", "--scripts-dir", str(scripts),
                "--log-dir", str(logs))
    assert r.returncode == 0, r.stderr
    down = tmp_path / "slurm-down"
    (shim / "scontrol").write_text(
        f'#!/bin/sh\nif [ -e "{down}" ]; then echo "{SHIM_SAYS}" >&2; exit 1; fi\n'
        f'exec {slurm.bins["scontrol"]} "$@"\n')
    (shim / "scontrol").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    return scripts, down


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

    scripts, down = cluster
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
    assert short.slurm["end"]["state"] == "FAILED" and "unanswered" not in short.slurm
    assert idle.state == "crashed" and idle.crash_class == "cancelled"
    assert idle.slurm["end"]["state"] == "CANCELLED" and idle.slurm["end"]["stopped_by_us"] is False
    # Slurm's own ExitCode for the cancelled job (0:15 or 0:0, as its cancel raced the node), in shell form
    assert idle.exit_status == (128 + sig if sig else status) and idle.slurm["end"]["signal"] == (sig or None)
