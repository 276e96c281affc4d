"""What the CLI and the console both decide is decided once, in the engine: which server a sweep
targets and how it is reached, what a level's outcome says, where a launch runs and how its stop went,
and what a Slurm launch is warned about before it starts."""
from __future__ import annotations

import asyncio
import sys
from types import SimpleNamespace

from console.store import launches as records
from console.store.launches import LaunchRecord


class TunnelHost:
    """A remote host as the bench sees it: every loopback port goes through a forward, recorded."""

    tunnelled = True

    def __init__(self):
        self.forwards: list[tuple[int, str]] = []

    async def forward_port(self, port: int, target: str = "127.0.0.1") -> int:
        self.forwards.append((port, target))
        return 40000 + len(self.forwards)

    def on_status(self, callback) -> None:
        pass

    async def run(self, *args, **kwargs):
        raise AssertionError("nothing may run on the login node before a Slurm launch")


def _job(profile: str, port: int, head: str) -> None:
    records.save(profile, LaunchRecord(id="job-1", config="cfg", script="/s.sh", log="/l", exit_file=None,
                                       state="ready", port=port,
                                       slurm={"job_id": "42", "head_addr": head, "nodes": ["n1"], "state": "RUNNING"}))


def test_the_bench_tab_tunnels_to_a_slurm_jobs_head_node_as_the_cli_does():
    """Before, only `gpudeck bench` led the tunnel to the job's head node; the console's sweep and its
    model list went to the login node's own loopback, where no server listens."""
    from console.runtime.host_runtime import HostRuntime

    _job("cluster", 8000, "10.0.0.7")
    host = TunnelHost()
    session = SimpleNamespace(host=host, name="cluster", readonly=False,
                              profile=SimpleNamespace(is_slurm=True, server=SimpleNamespace(url=None)))
    runtime = HostRuntime(session)
    seen = {}

    def launcher(values: dict, profile: str, tunnelled: bool) -> list[str]:
        seen.update(values, profile=profile, tunnelled=tunnelled)
        return [sys.executable, "-c", "pass"]

    async def go():
        try:
            await runtime.start_sweep({"url": "http://127.0.0.1:8000", "levels": "1"}, launcher)
        finally:
            await runtime.close()

    asyncio.run(go())
    assert host.forwards == [(8000, "10.0.0.7")]
    assert seen["url"] == "http://127.0.0.1:40001" and seen["tunnelled"] is True
    assert (seen["server_url"], seen["server_port"]) == ("http://127.0.0.1:8000", 8000)


def test_a_sweep_without_a_url_targets_the_running_launch_in_the_cli_as_in_the_bench_tab():
    """The Bench tab's form starts at the newest live launch when the profile names no server URL;
    `gpudeck bench` refused to run instead."""
    from console.cli import build_parser
    from console.commands.bench import build_config

    records.save("local", LaunchRecord(id="up-1", config="up", script="/s.sh", log="/l", exit_file=None,
                                       state="ready", port=30123, pgid=99999))
    args = build_parser().parse_args(["bench", "--concurrency", "1"])
    assert build_config(args, "local").url == "http://127.0.0.1:30123"


def test_the_bench_tabs_note_is_the_first_of_the_notes_the_cli_prints():
    from console.bench.live import view_from_run
    from console.commands.bench import format_table

    empty = {"median": None, "p99": None}
    base = {"completed": 1, "failed": 1, "output_throughput": None, "ttft_ms": empty, "tpot_ms": empty,
            "itl_ms": empty, "errors": []}
    levels = [dict(base, concurrency=1, status="failed", errors=["HTTP 500"], stopped=True, not_sent=3),
              dict(base, concurrency=2, status="interrupted", server_hung={"message": "server hung"},
                   errors=["timed out"]),
              dict(base, concurrency=4, status="skipped", skipped_because="level 2 failed"),
              dict(base, concurrency=8, status="ok")]
    doc = {"run_id": "r", "url": "http://x", "model": "m", "workload": {"input_len": 1, "output_len": 1},
           "levels": levels, "path": "p"}
    table = format_table(doc)
    notes = [lv.explanation for lv in view_from_run(doc).levels]
    assert notes == ["stopped by the operator, 3 not sent", "server hung", "skipped: level 2 failed", None]
    for note in notes[:3]:
        assert f"       {note}\n" in table
    assert "HTTP 500" in table and "timed out" not in table   # a server's own end explains its failed requests


def test_a_slurm_launch_is_not_warned_about_the_login_nodes_port():
    from console.servers.lifecycle import preflight

    session = SimpleNamespace(host=TunnelHost(), name="cluster", profile=SimpleNamespace(is_slurm=True))
    assert asyncio.run(preflight(session, 8000)) == []


def test_where_a_launch_runs_and_how_its_stop_went_read_the_same_everywhere():
    from console.servers.launching import StopResult, Survivor, stop_line, where

    local = LaunchRecord(id="a", config="a", script=None, log=None, exit_file=None, pgid=321)
    job = LaunchRecord(id="b", config="b", script=None, log=None, exit_file=None,
                       slurm={"job_id": "42", "nodes": ["n1", "n2"], "state": "CANCELLED",
                              "end": {"state": "CANCELLED"}})
    assert where(local) == "pgid 321" and where(job) == "job 42 (CANCELLED) on n1,n2"
    assert stop_line(local, StopResult("TERM", 1.5, 0)) == "stopped a (TERM, 1.5s, exit 0)"
    assert stop_line(job, StopResult("TERM", 2.0, None)) == "stopped b (job 42 CANCELLED, TERM, 2.0s)"
    left = StopResult("KILL", 9.0, None, survivors=[Survivor(77, "python -m x", ["port 8000"])])
    assert stop_line(local, left) == "NOT fully stopped a (KILL, 9.0s, exit N/A): still running: pid 77"
    assert left.leftovers() == ["pid 77 `python -m x` is still running (holds port 8000): it left the "
                                "server's process group"]


def test_how_a_wait_for_ready_ended_is_said_once_for_a_local_launch_and_a_job():
    from console.servers.follow import settled_line

    local = LaunchRecord(id="a", config="a", script=None, log=None, exit_file=None, pgid=5, state="loading")
    assert settled_line(local, 30) == "not ready after 30s (still loading)"
    local.state, local.exit_status = "stopped", 0
    assert settled_line(local, 30) == "stopped before it was ready (pgid 5, exit 0)"
    job = LaunchRecord(id="b", config="b", script=None, log=None, exit_file=None, state="crashed",
                       crash_class="segfault", slurm={"job_id": "42", "nodes": ["n1"], "state": "FAILED",
                                                      "failed_rank": 1, "failed_node": "n1"})
    assert settled_line(job, 30) == "✖ crashed (job 42 (FAILED) on n1 · rank 1 on n1): segfault"
    crash = {"class": "cuda-illegal-address", "line": 12, "summary": "illegal memory access"}
    assert settled_line(local, 30, crash).startswith("stopped")  # the record's state decides first
    local.state = "crashed"
    assert settled_line(local, 30, crash) == "✖ crashed: cuda-illegal-address at line 12: illegal memory access"
