"""Stopping a server never signals a process group that is not provably its own.

The main test runs inside a fresh PID namespace (`unshare --fork --pid
--mount-proc`), where the adopted server really sits in process group 1 beside
an unrelated process, exactly as in a container started without an init.
`kill -TERM -1` there would end every process of the namespace (and only of
the namespace, so the test is safe to run even against a broken gpudeck).
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from console.servers.signals import ProcessTable, Row, group_refusal, tree_targets

ROOT = Path(__file__).resolve().parent.parent

HELPER = textwrap.dedent("""
    import asyncio, json, os, subprocess, sys, time

    # Refuse to run anywhere but as pid 1 of a fresh namespace.
    assert os.getpid() == 1, "not in a new PID namespace"
    server = subprocess.Popen(["sh", "-c", "sleep 1001 & sleep 1002 & wait"])
    unrelated = subprocess.Popen(["sleep", "1003"])
    # both started: the server's two sleeps and the unrelated one are running (not just forked)
    deadline = time.monotonic() + 30
    while len(subprocess.run(["pgrep", "-x", "-f", "sleep 100[123]"], capture_output=True,
                             text=True).stdout.split()) < 3:
        assert time.monotonic() < deadline, "the sleeps never started"
        time.sleep(0.02)

    from console.servers import lifecycle
    from console.session import HostSession
    from profiles import store

    async def main():
        session = HostSession.open(store.load("local"))
        record = await lifecycle.adopt(session, server.pid)
        out = {"pgid": record.pgid}
        try:
            result = await lifecycle.stop(session, record, grace_s=5)
            out.update(how=getattr(result, "how", None), refused=getattr(result, "refused", None))
        except lifecycle.LaunchError as exc:
            out["error"] = str(exc)
        server.poll(); unrelated.poll()
        out["server_returncode"] = server.returncode
        out["unrelated_alive"] = unrelated.returncode is None
        out["server_children"] = subprocess.run(["pgrep", "-f", "sleep 100[12]"],
                                                capture_output=True, text=True).stdout.split()
        print("RESULT " + json.dumps(out), flush=True)

    asyncio.run(main())
    unrelated.kill()
""")


def _unshare_works() -> None:
    if shutil.which("unshare") is None:
        pytest.fail("unshare not found: install util-linux", pytrace=False)
    probe = subprocess.run(["unshare", "--fork", "--pid", "--mount-proc", "true"], capture_output=True, text=True)
    if probe.returncode != 0:
        pytest.fail(f"unshare --pid is not permitted here ({probe.stderr.strip()}); "
                    "run the tests as root or with user namespaces enabled", pytrace=False)


def test_stop_of_a_server_in_group_1_signals_only_its_own_tree(tmp_path):
    _unshare_works()
    helper = tmp_path / "helper.py"
    helper.write_text(HELPER)
    env = dict(os.environ, PYTHONPATH=str(ROOT), GPUDECK_HOME=str(tmp_path / "home"))
    # setsid: pid 1 of the namespace leads its own session and group 1, so every
    # child it starts (the server and the unrelated process) is in group 1.
    proc = subprocess.run(["unshare", "--fork", "--pid", "--mount-proc", "setsid", sys.executable, str(helper)],
                          capture_output=True, text=True, env=env, timeout=120)
    found = [line for line in proc.stdout.splitlines() if line.startswith("RESULT ")]
    assert found, f"helper gave no result (rc {proc.returncode}): {proc.stderr[-2000:]}"
    out = json.loads(found[0][len("RESULT "):])
    assert out["pgid"] == 1
    assert out["unrelated_alive"], f"an unrelated process in group 1 was killed: {out}"
    assert "error" not in out, out
    assert out["how"] == "tree" and "process group 1" in out["refused"]
    assert out["server_returncode"] is not None, f"the server itself survived: {out}"
    assert out["server_children"] == [], f"the server's children survived: {out}"


def _table(rows, self_pid=900):
    return ProcessTable({r[0]: Row(*r) for r in rows}, self_pid)


# pid, ppid, pgid, sid, comm
_HOST = [
    (1, 0, 1, 1, "systemd"),
    (500, 1, 500, 500, "sshd"),
    (600, 500, 600, 600, "sshd"),
    (700, 600, 700, 700, "bash"),       # the operator's login shell
    (710, 700, 710, 700, "python3"),    # a server started from that shell, own job group
    (711, 710, 710, 700, "python3"),    # its worker
    (800, 700, 800, 700, "sh"),         # a script in whose group a server was started ...
    (801, 800, 800, 700, "llama-server"),
    (802, 800, 800, 700, "tail"),       # ... beside a process that is not the server's
    (900, 600, 900, 900, "sh"),         # the command reading the table
]


def test_group_refusal_rules():
    table = _table(_HOST)
    assert group_refusal(table, 710, 710) is None
    assert "not the server's own" in group_refusal(table, 1, 801)
    assert "not the server's own" in group_refusal(table, 0, 801)
    assert "runs gpudeck's commands" in group_refusal(table, 600, 600)  # sshd's session
    assert "runs gpudeck's commands" in group_refusal(table, 900, 900)
    assert "outside the server's process tree" in group_refusal(table, 800, 801)
    assert "outside" in group_refusal(table, 700, 710)  # the login shell's group
    # the whole group descends from the root: fine
    assert group_refusal(table, 800, 800) is None


def test_tree_targets_never_include_init_or_gpudecks_own_ancestors():
    table = _table(_HOST)
    assert sorted(tree_targets(table, 801)) == [801]
    assert sorted(tree_targets(table, 710)) == [710, 711]
    assert tree_targets(table, 1) == []  # pid 1's tree would be the whole host
    assert 900 not in tree_targets(table, 600)


def test_a_session_gpudeck_created_is_its_own_even_after_the_leader_exited():
    # the launched script (pid 1000) exited; its worker, reparented to init, stays in the session
    table = _table(_HOST + [(1001, 1, 1000, 1000, "python3")])
    assert group_refusal(table, 1000, 1000, own_session=True) is None
    assert "outside" in group_refusal(table, 1000, 1000, own_session=False)


def test_without_a_process_table_only_gpudecks_own_session_is_signalled():
    empty = ProcessTable({}, None)
    assert group_refusal(empty, 4242, 4242, own_session=True) is None
    assert "could not be read" in group_refusal(empty, 4242, 4242, own_session=False)
    assert "not the server's own" in group_refusal(empty, 1, 4242, own_session=True)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"


async def test_over_ssh_a_shared_group_is_refused_and_only_the_adopted_tree_stops(ssh_profile):
    from console.servers import lifecycle
    from console.session import HostSession

    session = HostSession.open(ssh_profile)
    try:
        # two processes left in one group by the same remote shell: adopt one, the other is a bystander
        out = await session.host.run(["sh", "-c", "sleep 1001 >/dev/null 2>&1 & echo $!; "
                                                  "sleep 1002 >/dev/null 2>&1 & echo $!"])
        server, bystander = (int(p) for p in out.stdout.split())
        try:
            record = await lifecycle.adopt(session, server)
            result = await lifecycle.stop(session, record, grace_s=5)
            assert result.how == "tree" and "outside the server's process tree" in result.refused, result.to_json()
            assert not _alive(server)
            assert _alive(bystander), "a process beside the server in its group was signalled"
            assert result.clean, result.to_json()  # the bystander is not the server's survivor
            assert await lifecycle.kill_escaped(session, record) == []
            assert _alive(bystander)
        finally:
            if _alive(bystander):
                os.kill(bystander, 9)
    finally:
        await session.host.close()


async def test_over_ssh_a_launched_server_is_stopped_as_its_own_group(ssh_profile, tmp_path):
    from console.servers import configs as cfgs
    from console.servers import lifecycle
    from console.session import HostSession
    from profiles import store

    scripts = tmp_path / "scripts"
    scripts.mkdir()
    (scripts / "two.sh").write_text("#!/bin/sh\nsleep 1000 &\nexec sleep 1001\n")
    ssh_profile.server.scripts_dir = str(scripts)
    ssh_profile.server.log_dir = str(tmp_path / "logs")
    store.save(ssh_profile)
    session = HostSession.open(ssh_profile)
    try:
        config = cfgs.find(await cfgs.discover(session), "two")
        record = await lifecycle.launch(session, config.name, config.script)
        result = await lifecycle.stop(session, record, grace_s=5)
        assert result.how == "group" and result.refused is None
        assert result.clean and record.state == "stopped" and record.exit_status == 143
        assert await lifecycle.marked_pids(session.host, record.id) == []
    finally:
        await session.host.close()
