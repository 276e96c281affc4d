"""Fuzzing what Slurm's commands print: `scontrol show node/job`, `squeue`, `sbatch`, `sacct`.

Their output is outside text: a broken plugin, an old or patched Slurm, a
job name or node reason someone else chose. For each reader hypothesis
generates 200 inputs (1,000 with GPUDECK_FUZZ=nightly): the test cluster's
saved outputs with splices of random and hostile bytes, lines built field by
field with junk values (counts of 10^40, '²', hostile names, host lists that
expand without end, keys repeated), and raw text. Each reader must answer
within its rules, never raise anything but the one-line `SlurmError` it
documents, and never return a fact past its bounds: a job id outside the one
rule, a GPU count no machine has, an exit code no process gives.

A few generated answers also go through the real CLI (`gpus -p`, `server
status`) with stand-ins for the Slurm commands first on PATH: no traceback,
no control byte on screen.
"""
from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

from hypothesis import example, given
from hypothesis import strategies as st

from console.slurm.accounting import parse_sacct
from console.slurm.fields import MAX_GPUS_PER_NODE, exit_code, gres_gpus, parse_record
from console.slurm.hostlist import MAX_NODES
from console.slurm.job_ids import MAX_JOB_ID, checked
from console.slurm.jobs import MAX_COUNT, MAX_JOB_GPUS, parse_job, parse_sbatch
from console.slurm.nodes import MAX_PLACEMENTS, parse_nodes, parse_squeue
from console.slurm.run import SlurmError
from tests.cli import gpudeck
from tests.hostile_text import HOSTILE, unsafe_chars
from tests.fuzz_budget import fuzz_settings

ROOT = Path(__file__).resolve().parent.parent
FIX = ROOT / "tests" / "fixtures" / "slurm"



# ---- generated outputs ------------------------------------------------------------------------

JUNK_NUMBERS = ["²", "٣", "-1", "+4", "0x10", "1e3", " 7", "", "(null)", "N/A", "0" * 30, "9" * 40,
                str(MAX_JOB_ID), str(MAX_JOB_ID + 1), str(MAX_GPUS_PER_NODE), str(MAX_GPUS_PER_NODE + 1)]
NUMBER = st.one_of(st.integers(0, 5000).map(str), st.integers(0, 10**40).map(str), st.sampled_from(JUNK_NUMBERS))
WORD = st.one_of(st.from_regex(r"[a-z][a-z0-9_-]{0,10}", fullmatch=True), st.sampled_from(HOSTILE),
                 st.text(max_size=12))
GRES_PART = st.one_of(
    st.builds(lambda n: f"gpu:{n}", NUMBER),
    st.builds(lambda t, n, s: f"gpu:{t}:{n}(S:{s})", WORD, NUMBER, NUMBER),
    st.builds(lambda n: f"shard:{n}", NUMBER),
    st.sampled_from(["gpu", "gpu:", "gpu:h100", "(null)", "gpu:4(S:0-1", "gpu:4)", "((((", "gpu:1,,"]),
)
GRES = st.lists(GRES_PART, min_size=1, max_size=6).map(",".join)
HOSTLIST = st.one_of(
    st.builds(lambda p, a, b: f"{p}[{a}-{b}]", st.sampled_from(["n", "gpu", ""]), NUMBER, NUMBER),
    st.builds(lambda a, b: f"n[{a},{b}],x[03-05]", NUMBER, NUMBER),
    st.sampled_from(["n1", "n[1-2]", "n[1-99999]", "n[2-1]", "n[", "n]1[", "(null)", "n[1-4096]"]),
    WORD,
)
STATE = st.one_of(st.sampled_from(["RUNNING", "PENDING", "COMPLETED", "FAILED", "CANCELLED by 0", "MIXED+DRAIN",
                                   "IDLE*", "DOWN+NOT_RESPONDING", "TIMEOUT", "OUT_OF_MEMORY"]), WORD)


def _join(fields: list[tuple[str, str]]) -> str:
    return " ".join(f"{k}={v}" for k, v in fields)


NODE_LINE = st.builds(lambda name, state, gres, used, addr, reason: _join(
    [("NodeName", name), ("State", state), ("Gres", gres), ("GresUsed", used), ("NodeAddr", addr),
     ("Partitions", "gpu"), ("Reason", reason)]), WORD, STATE, GRES, GRES, WORD, WORD)
JOB_LINE = st.builds(lambda jid, name, user, state, a, b, nodes, count, gres, comment: _join(
    [("JobId", jid), ("JobName", name), ("UserId", f"{user}(0)"), ("JobState", state), ("ExitCode", f"{a}:{b}"),
     ("NodeList", nodes), ("BatchHost", "n1"), ("NumNodes", count), ("NumTasks", count), ("Restarts", count),
     ("JOB_GRES", gres), ("TresPerNode", f"gres:{gres}"), ("Comment", comment)]),
    NUMBER, WORD, WORD, STATE, NUMBER, NUMBER, HOSTLIST, NUMBER, GRES, WORD)
SQUEUE_LINE = st.builds(lambda jid, state, nodes, name, user: "|".join([jid, state, nodes, name, user]),
                        NUMBER, STATE, HOSTLIST, WORD, WORD)
SACCT_TAIL = st.one_of(st.just(""), st.just("|root|gpudeck-a"), st.builds(lambda u, n: f"|{u}|{n}", WORD, WORD))
SACCT_LINE = st.builds(lambda jid, state, a, b, rest: f"{jid}|{state}|{a}:{b}{rest}", NUMBER, STATE, NUMBER, NUMBER,
                       SACCT_TAIL)


def _splice(sample: str, edits: list[tuple[int, int, str]]) -> str:
    out = sample
    for pos, cut, insert in edits:
        at = pos % (len(out) + 1)
        out = out[:at] + insert + out[at + cut:]
    return out


SACCT_SAMPLE = "12|CANCELLED by 0|0:15|root|gpudeck-a\n12.batch|CANCELLED|0:15|root|batch\n13|COMPLETED|0:0|alice|x\n"


def outputs(fixtures: list[str], line: st.SearchStrategy[str]) -> st.SearchStrategy[str]:
    """Saved real outputs with splices, lines built field by field (saved lines mixed in), raw text."""
    samples = [(FIX / name).read_text() if name.endswith(".txt") else name for name in fixtures]
    real = [ln for s in samples for ln in s.splitlines()]
    insert = st.one_of(st.text(max_size=24), st.sampled_from(HOSTILE + [" UserId=root(0)", " JobId=1", "\n", "="]))
    return st.one_of(
        st.text(max_size=600),
        st.builds(_splice, st.sampled_from(samples),
                  st.lists(st.tuples(st.integers(0, 1 << 16), st.integers(0, 40), insert), max_size=8)),
        st.lists(st.one_of(line, st.sampled_from(real)), max_size=12).map("\n".join),
    )


# ---- the readers, one property each ------------------------------------------------------------

def _gpus_in_bounds(value, most: int) -> bool:
    return value is None or (isinstance(value, int) and 0 <= value <= most)


@fuzz_settings()
@given(outputs(["nodes_mixed_drain.txt", "nodes_down.txt"], NODE_LINE))
def test_scontrol_show_node_reads_within_bounds(text):
    for node in parse_nodes(text):
        assert node.name and isinstance(node.name, str)
        assert _gpus_in_bounds(node.gpus_total, MAX_GPUS_PER_NODE)
        assert _gpus_in_bounds(node.gpus_used, MAX_GPUS_PER_NODE)
        assert _gpus_in_bounds(node.gpus_free, MAX_GPUS_PER_NODE)
        assert node.to_json()["gpus_free"] == node.gpus_free


@fuzz_settings()
@given(outputs(["job_running.txt", "job_two_nodes.txt"], JOB_LINE))
def test_scontrol_show_job_reads_within_bounds(text):
    job = parse_job(text)
    if job is None:
        return
    assert checked(job.job_id) == job.job_id
    assert _gpus_in_bounds(job.gpus, MAX_JOB_GPUS)
    assert job.num_nodes is None or 0 <= job.num_nodes <= MAX_NODES
    assert all(v is None or 0 <= v <= MAX_COUNT for v in (job.num_tasks, job.restarts))
    assert all(v is None or 0 <= v <= 255 for v in (job.exit_status, job.exit_signal))
    assert len(job.nodes) <= MAX_NODES
    assert set(job.repeated) <= {"JobId", "JobName", "UserId", "Comment"}


@fuzz_settings()
@given(st.one_of(outputs(["squeue_mixed_drain.txt", "squeue_two_nodes.txt", "squeue_down.txt"], SQUEUE_LINE),
                 st.builds(lambda line, times: "\n".join([line] * times), SQUEUE_LINE, st.integers(1, 100))))
@example("\n".join(f"{i}|RUNNING|n[1-4096]|job|u" for i in range(100)))   # short lines, 409,600 placements
def test_squeue_reads_within_bounds_or_refuses_in_one_line(text):
    try:
        on_node = parse_squeue(text)
    except SlurmError as exc:
        assert str(exc) == f"squeue placed more than {MAX_PLACEMENTS} jobs on nodes; the answer is not read"
        return
    assert sum(len(jobs) for jobs in on_node.values()) <= MAX_PLACEMENTS


@fuzz_settings()
@given(st.one_of(NUMBER, st.builds(lambda n, c: f"{n};{c}", NUMBER, WORD), st.text(max_size=40)))
def test_sbatch_sacct_scontrol_and_the_record_take_one_job_id_rule(jid):
    """Whatever sbatch printed: accepted by all three readers, or by none (no record stuck in launching)."""
    from console.servers.launching import job_id
    from console.store.launches import LaunchRecord

    try:
        from_sbatch = parse_sbatch(jid + "\n")
    except SlurmError as exc:
        assert str(exc).startswith("sbatch printed no job id: ") and "\n" not in str(exc)
        from_sbatch = None
    first = jid.split(";")[0].strip() if jid.strip() else ""
    record = LaunchRecord(id="x", config="x", script=None, log=None, exit_file=None, state="launching",
                          slurm={"job_id": from_sbatch or first})
    shown = parse_job(f"JobId={from_sbatch or first} JobName=x JobState=RUNNING")
    if from_sbatch is not None:
        assert job_id(record) == from_sbatch and shown is not None and shown.job_id == from_sbatch
        assert 1 <= int(from_sbatch) <= MAX_JOB_ID
    else:
        assert job_id(record) is None or "\n" in first or first != first.strip()


@fuzz_settings()
@given(outputs([SACCT_SAMPLE], SACCT_LINE), NUMBER)
def test_sacct_reads_a_state_and_an_exit_code_or_nothing(text, jid):
    ours = parse_sacct(text, jid, "gpudeck-a", "root")
    if ours is not None:   # only from a line of our name and user
        assert any(line.strip().startswith(f"{jid}|") and line.strip().endswith("|root|gpudeck-a")
                   for line in text.splitlines())
    for found in (parse_sacct(text, jid), ours):
        if found is not None:
            assert found.state and found.state.replace("_", "").isalpha() and found.state.isupper()
            assert all(v is None or 0 <= v <= 255 for v in (found.exit_status, found.exit_signal))


@fuzz_settings()
@given(GRES)
def test_a_gres_count_is_a_count_a_node_can_hold_or_unknown(gres):
    assert _gpus_in_bounds(gres_gpus(gres), MAX_GPUS_PER_NODE)


@fuzz_settings()
@given(NUMBER, NUMBER)
def test_an_exit_code_is_a_status_and_a_signal_or_unknown(a, b):
    status, signal = exit_code(f"{a}:{b}")
    assert (status is None) == (signal is None)
    assert status is None or (0 <= status <= 255 and 0 <= signal <= 255)


@fuzz_settings()
@given(WORD, WORD, st.lists(st.sampled_from(["UserId=root(0)", "Comment=gpudeck-launch:run_a-1",
                                              "JobName=gpudeck-run_a", "JobId=9"]), min_size=1, max_size=3))
def test_a_job_whose_free_text_spells_our_identity_is_never_ours(user, prefix, forged):
    """JobName (or any value before the real keys) holding ` UserId=root(0)`: never read as our job."""
    from console.slurm.ownership import foreign
    from console.store.launches import LaunchRecord

    record = LaunchRecord(id="run_a-1", config="run_a", script=None, log=None, exit_file=None, state="loading",
                          slurm={"job_id": "9", "owner": {"name": "gpudeck-run_a", "user": "root",
                                                          "comment": "gpudeck-launch:run_a-1"}})
    line = (f"JobId=9 JobName=gpudeck-run_a {' '.join(forged)} UserId={user}(1001) JobState=RUNNING "
            f"Comment=gpudeck-launch:run_a-1 {' '.join(forged)}")
    job = parse_job(line)
    assert job is not None and foreign(record, job, "root") is not None
    assert parse_record(f"{prefix} A=1 A=2", repeated=(seen := set()))["A"] == "1" and seen == {"A"}


# ---- through the real CLI ----------------------------------------------------------------------

def _fake_slurm(shim: Path, outputs: dict[str, str]) -> None:
    """Stand-ins for the Slurm commands, each printing its saved answer (files beside them)."""
    shim.mkdir(exist_ok=True)
    for name, text in outputs.items():
        (shim / f"{name}.out").write_text(text, errors="surrogateescape")
        (shim / name).write_text(f"#!/bin/sh\ncat '{shim / name}.out'\n")
        (shim / name).chmod(0o755)


def _path_first(folder: Path) -> dict[str, str]:
    """PATH with `folder` searched first, so the stand-ins answer for Slurm."""
    return {"PATH": f"{folder}{os.pathsep}{os.environ['PATH']}"}


def _screen_ok(r: subprocess.CompletedProcess) -> None:
    assert r.returncode in (0, 1), r.stderr[-2000:]
    assert "Traceback" not in r.stderr and "internal error" not in r.stderr, r.stderr[-2000:]
    assert not unsafe_chars(r.stdout) and not unsafe_chars(r.stderr), (r.stdout[-500:], r.stderr[-500:])


@fuzz_settings(6)
@given(st.lists(NODE_LINE, min_size=1, max_size=4).map("\n".join), outputs(["squeue_mixed_drain.txt"], SQUEUE_LINE))
@example("NodeName=n1 State=IDLE Gres=gpu:² GresUsed=gpu:0 Partitions=gpu", "")
def test_gpus_of_a_slurm_profile_shows_any_answer_plainly(tmp_path_factory, nodes, queue):
    home = tmp_path_factory.mktemp("fuzz-gpus")
    os.environ["GPUDECK_HOME"] = str(home / "gpudeck")
    shim = home / "shim"
    _fake_slurm(shim, {"sinfo": "n1\nn2\n", "scontrol": nodes, "squeue": queue})
    assert gpudeck("profiles", "add", "cl", "--slurm", env=_path_first(shim), errors="surrogateescape").returncode == 0
    _screen_ok(gpudeck("gpus", "-p", "cl", env=_path_first(shim), errors="surrogateescape"))


@fuzz_settings(6)
@given(JOB_LINE, outputs([SACCT_SAMPLE], SACCT_LINE))
@example("JobId=1 JobName=gpudeck-a UserId=root(0) JobState=RUNNING NumNodes=² ExitCode=0:0", "")
def test_server_status_of_a_job_shows_any_scontrol_answer_plainly(tmp_path_factory, job, sacct):
    from console.store import launches
    from console.store.launches import LaunchRecord

    home = tmp_path_factory.mktemp("fuzz-status")
    os.environ["GPUDECK_HOME"] = str(home / "gpudeck")
    shim = home / "shim"
    _fake_slurm(shim, {"scontrol": job, "sacct": sacct})
    assert gpudeck("profiles", "add", "cl", "--slurm", env=_path_first(shim), errors="surrogateescape").returncode == 0
    launches.save("cl", LaunchRecord(id="a-1", config="a", script=None, log=None, exit_file=None, state="loading",
                                     slurm={"job_id": "1", "state": "RUNNING", "nodes": ["n1"],
                                            "log_dir": "/nonexistent"}))
    shown = gpudeck("server", "status", "-p", "cl", "--json", env=_path_first(shim), errors="surrogateescape")
    _screen_ok(shown)
    assert [s["config"] for s in json.loads(shown.stdout)["servers"]] == ["a"]
    _screen_ok(gpudeck("server", "status", "-p", "cl", env=_path_first(shim), errors="surrogateescape"))
