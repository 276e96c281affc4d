"""A launch whose process says it crashed but whose class is still unknown is triaged from its
whole log after the campaign's stop: the log's cause names it, not "unknown".

Seen once under load: the simulated campaign's crash at 256 streams read `unknown` where its log
holds the CUDA illegal-address traceback."""
from __future__ import annotations

import io

from profiles import store
from console.servers import launch_state
from console.servers.monitor import ServerMonitor
from console.session import HostSession
from console.sim import faults
from console.sim.sglang_log import LogWriter
from console.store.launches import LaunchRecord


def _crashed_record(tmp_path, crash_class: str | None) -> LaunchRecord:
    text = io.StringIO()
    log = LogWriter(text)
    log.line("The server is fired up and ready to roll!")
    faults.illegal_address(log, 3)
    path = tmp_path / "run_tp8_ep8_crash.log"
    path.write_text(text.getvalue())
    record = LaunchRecord(id="run_tp8_ep8_crash-1", config="run_tp8_ep8_crash", script=None, log=str(path),
                          exit_file=None, pid=4242, pgid=4242, state=launch_state.S.CRASHED, exit_status=1,
                          crash_class=crash_class)
    return record


async def test_an_unknown_class_is_read_again_from_the_whole_log(tmp_path):
    session = HostSession.open(store.load("local"))
    try:
        for before in (None, "unknown"):
            record = _crashed_record(tmp_path, before)
            monitor = ServerMonitor(session, record, poll_s=0.2)
            assert await monitor.triage_after_stop()
            assert record.crash_class == "cuda-illegal-address" and record.state == "crashed", (before, record)
    finally:
        await session.host.close()
