"""An ended launch's record state and a Slurm job's end class follow the one process verdict
(`triage.process.judge`), so the record, its crash record and the job's end never read one exit two ways."""
from __future__ import annotations

import asyncio

import pytest

from console.servers.engine_death import ended_state, recheck_clean_exit
from console.store.launches import LaunchRecord
from console.servers.triage.process import SIGNAL_CLASSES
from console.slurm.ending import job_end

DIED = "(APIServer pid=1) ERROR [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, shutting down"
ASKED = "(APIServer pid=1) INFO [launcher.py:99] Shutting down FastAPI HTTP server."


def _ended(exit_status, kill_requested=False, log=None) -> LaunchRecord:
    return LaunchRecord(id="c-1", config="c", script=None, log=log, exit_file=None, state="stopped",
                        exit_status=exit_status, kill_requested=kill_requested)


@pytest.mark.parametrize("status, asked, text, state", [
    (0, False, None, "stopped"),                       # a clean exit
    (0, False, f"ready\n{DIED}\n", "crashed"),         # exit 0 after the engine died unasked
    (0, False, f"{ASKED}\n{DIED}\n", "stopped"),       # the death came after a shutdown was asked for
    (0, True, f"ready\n{DIED}\n", "stopped"),          # a stop gpudeck asked for is never a crash
    (137, False, None, "crashed"), (1, False, None, "crashed"), (None, False, None, "crashed"),
    (143, True, None, "stopped"),
])
def test_an_ended_records_state_is_the_process_verdicts(status, asked, text, state):
    assert ended_state(_ended(status, asked), text) == state


def test_the_recheck_of_a_clean_exit_reads_the_log_once_and_follows_the_verdict(tmp_path):
    from console.hosts import LocalHost

    log = tmp_path / "server.log"
    log.write_text(f"INFO started\n{DIED}\nINFO exiting\n")
    record = _ended(0, log=str(log))
    host = LocalHost()
    assert asyncio.run(recheck_clean_exit(host, record)) is True
    assert record.state == "crashed"
    asked = _ended(0, log=str(tmp_path / "asked.log"))
    (tmp_path / "asked.log").write_text(f"{ASKED}\n{DIED}\n")
    assert asyncio.run(recheck_clean_exit(host, asked)) is False and asked.state == "stopped"


@pytest.mark.parametrize("number", sorted(SIGNAL_CLASSES))
def test_a_jobs_signal_class_is_the_triage_verdicts(number):
    cls, _name = SIGNAL_CLASSES[number]
    assert job_end("FAILED", 128 + number, 0, False).cls == cls
    assert job_end("FAILED", 0, number, False).cls == cls


def test_a_job_we_cancelled_is_stopped_however_it_ended():
    """As for a local launch: a stop gpudeck asked for is never a crash, whatever the exit said."""
    for status, signal in ((139, 0), (1, 0), (0, 9)):
        end = job_end("FAILED", status, signal, True)
        assert (end.cls, end.stopped_by_us, end.crashed) == ("stopped", True, False)
    assert job_end("FAILED", 0, 9, False).cls == "process-killed"
    assert job_end("FAILED", 1, 0, False).cls == "exit-nonzero"
