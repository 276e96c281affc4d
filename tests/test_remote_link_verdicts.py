"""Verdicts of the sweep's link check over the real sshd, case by case."""
from __future__ import annotations

import pytest

from console.bench.linkcheck import LinkCheck
from console.bench.runner import BenchConfig, Sweep
from console.hosts import SSHHost
from tests.realparts import start_llama_server


@pytest.fixture
def one_thread_server(tmp_path):
    server = start_llama_server(tmp_path / "llama.log", "-t", "1", "-np", "2", "-c", "1024")
    yield server
    server.stop()


async def test_only_the_tunnels_connection_drops_and_the_checker_sees_no_outage(ssh_profile, one_thread_server):
    """The tunnel's connection breaks while the checker's own connection stays up (one TCP
    connection reset, not the whole host): still a lost link, not a dead server."""
    tunnel_host, own_host = SSHHost(ssh_profile), SSHHost(ssh_profile)
    try:
        local = await tunnel_host.forward_port(one_thread_server.port)
        url = f"http://127.0.0.1:{local}"
        check = LinkCheck(own_host, url, ssh_profile.name, one_thread_server.port, wait_s=20)
        await check.start()
        broken = {"done": False}

        def emit(event: dict) -> None:
            if event.get("event") == "request" and not broken["done"]:
                broken["done"] = True
                tunnel_host._conn.abort()  # this connection only

        bench = BenchConfig(url=url, concurrency=[2], input_len=16, output_len=8, num_prompts=8,
                            profile=ssh_profile.name, tunnelled=True, server_port=one_thread_server.port)
        doc = await Sweep(bench, emit=emit, link=check).run()
        await check.close()
        level = doc["levels"][0]
        assert broken["done"] and check.drops == [], "the checker's own connection was not supposed to drop"
        assert level.get("server_died") is None, level.get("server_died")
        lost = (level.get("interrupted_attempt") or {}).get("link_lost")
        assert lost is not None, (level["status"], level["errors"])
        assert not lost["dropped"] and lost["server"] == "answering" and lost["tunnel_health"] == 200
        assert level["status"] == "ok" and level["completed"] == 8
    finally:
        await tunnel_host.close()
        await own_host.close()


def test_a_death_does_not_claim_a_pid_exited_while_its_record_says_it_lives():
    import time

    from console.bench.launched import death_details
    from console.store import launches

    record = launches.LaunchRecord(id="l9", config="smol", script="run.sh", log="x.log", exit_file=None,
                                  pid=20187, port=8390, state="ready")
    launches.save("local", record)
    assert death_details("local", "l9", time.time())["pid"] is None
    record.state, record.exit_status = "crashed", 139
    launches.save("local", record)
    assert death_details("local", "l9", time.time())["pid"] == 20187


def test_a_sweep_names_the_crash_record_the_store_finds_for_its_launch():
    """One lookup of a launch's crash (store.crashes.crash_of_launch): a record named by the launch's
    id that does not repeat it in a `launch` field is still that launch's crash to the sweep."""
    import json
    import time

    from console.bench.launched import death_details
    from console.store.crashes import crash_of_launch, crashes_dir

    crashes_dir("local").mkdir(parents=True)
    (crashes_dir("local") / "l9.json").write_text(json.dumps(
        {"id": "l9", "config": "smol", "class": "cuda-oom", "time": "2026-11-30T10:00:00+0000"}))
    assert crash_of_launch("local", "l9").id == "l9"
    assert death_details("local", "l9", time.time())["crash_record"] == "l9"


@pytest.mark.parametrize("said, link, expected", [
    ("connection refused from 10:00:00; server pid 42 exited (1); crash record x.json",
     {"server": "exited", "pid": 42, "exit_status": 137, "dropped": False, "at": None},
     "connection refused from 10:00:00; server pid 42 exited (137) (checked over SSH); crash record x.json"),
    ("connection refused from 10:00:00",
     {"server": "exited", "pid": 42, "exit_status": None, "dropped": True, "at": "10:00:01"},
     "connection refused from 10:00:00; server pid 42 exited (checked over SSH); "
     "the SSH link also dropped at 10:00:01"),
    ("connection refused from 10:00:00",
     {"server": "not answering", "pid": 42, "exit_status": None, "dropped": False, "at": None},
     "connection refused from 10:00:00; /health does not answer on the host either (checked over SSH)"),
])
def test_a_confirmed_death_says_what_the_host_said(said, link, expected):
    from console.hosts import LocalHost

    check = LinkCheck(LocalHost(), "http://127.0.0.1:1", "local")
    level = {"status": "failed", "server_died": {"since": "10:00:00", "message": said}}
    died = check._apply(level, {"kind": "server-died", "link": link})["server_died"]
    assert died["message"] == expected and died["checked_over_ssh"]
    assert ("pid" in died) == (link["server"] == "exited")
