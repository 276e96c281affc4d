"""A sweep against a server gpudeck launched names its config, and its pid and crash record when it dies."""
from __future__ import annotations

import time

from console.bench.launched import death_details, launch_for_port, launch_summary
from console.store import crashes, launches


class Verdict:
    cls = "cuda-illegal-address"
    line = 812
    summary = "CUDA error: an illegal memory access was encountered"
    excerpt = ("RuntimeError: CUDA error: an illegal memory access was encountered",)
    server = "sglang"


def test_launch_found_by_port_and_death_named():
    started = time.time()
    record = launches.LaunchRecord(id="l1", config="tp8-ep8-memsafe", script="run.sh", log="x.log", exit_file=None,
                                  pid=4242, port=30000, state="ready", flags={"tp": 8, "ep": 1})
    launches.save("local", record)
    found = launch_for_port("local", 30000)
    assert launch_summary(found) == {"config": "tp8-ep8-memsafe", "flags": {"tp": 8, "ep": 1},
                                     "launch": "l1", "pid": 4242}
    assert launch_for_port("local", 30001) is None
    # the server dies; the Server tab records the crash
    record.state, record.exit_status, record.stopped_at = "crashed", 1, time.time()
    crash = crashes.write_crash("local", record, Verdict(), sweep="sweep-1400 level 256")
    record.crash_record = f"{crash.id}.json"
    launches.save("local", record)
    details = death_details("local", "l1", started)
    assert details == {"pid": 4242, "exit_status": 1, "crash_record": f"{crash.id}.json"}


def test_server_not_launched_by_gpudeck_has_no_details():
    assert launch_for_port("local", 8000) is None
    assert death_details("local", None, time.time()) == {"pid": None, "exit_status": None, "crash_record": None}


def test_setup_form_defaults_to_the_running_server():
    from console.bench.endpoint import running_server_url

    assert running_server_url("local") is None
    launches.save("local", launches.LaunchRecord(id="l2", config="tp1", script=None, log=None, exit_file=None,
                                               port=30001, state="ready"))
    assert running_server_url("local") == "http://127.0.0.1:30001"
