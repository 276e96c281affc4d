"""SSHHost against a real OpenSSH sshd on 127.0.0.1."""
from __future__ import annotations

import asyncio
import json
import os
import sys
import time

import pytest

from console.hosts import HostError, HostKeyUnknown, SSHHost, remote_command
from profiles.profile import profile_from_dict

AWKWARD = [
    "plain",
    "two words",
    "it's \"quoted\"",
    "(parens) *glob? $HOME ; & | `tick` \\back\\slash",
    "line one\nline two\n",
    "",
    "-n",
    "ünïcødé ✓",
    "!history !! ~tilde {a,b} [x] #hash",
]


async def test_run_and_awkward_arguments_arrive_byte_exact(ssh_profile):
    host = SSHHost(ssh_profile)
    try:
        probe = [sys.executable, "-c", "import json,sys; print(json.dumps(sys.argv[1:]))", *AWKWARD]
        result = await host.run(probe)
        assert result.returncode == 0, result.stderr
        assert json.loads(result.stdout) == AWKWARD
        assert host.status.state == "connected"
    finally:
        await host.close()


async def test_run_reports_exit_status_and_stderr(ssh_profile):
    host = SSHHost(ssh_profile)
    try:
        result = await host.run(["sh", "-c", "echo out; echo err >&2; exit 7"])
        assert (result.returncode, result.stdout, result.stderr) == (7, "out\n", "err\n")
    finally:
        await host.close()


async def test_awkward_arguments_survive_a_zsh_like_login_shell_quoting():
    # The wrapper contains only characters that every common shell reads the same way.
    cmd = remote_command(["echo", "a b", "$(x)", "'q'"])
    assert "\n" not in cmd and "!" not in cmd and "\\" not in cmd
    assert cmd.startswith("sh -c '") and cmd.count("'") == 2


async def test_stream_yields_lines_and_cancel_ends_the_remote_process(ssh_profile, tmp_path):
    host = SSHHost(ssh_profile)
    pidfile = tmp_path / "pid"
    script = f"echo $$ > {pidfile}; i=0; while true; do echo tick $i; i=$((i+1)); sleep 0.05; done"
    try:
        lines = []
        async with host.stream(["sh", "-c", script]) as stream:
            async for line in stream:
                lines.append(line)
                if len(lines) == 3:
                    break
        assert lines == ["tick 0", "tick 1", "tick 2"]
        pid = int(pidfile.read_text())
        deadline = time.monotonic() + 15  # a bound for a busy machine, not a speed check
        while time.monotonic() < deadline and _alive(pid):
            await asyncio.sleep(0.05)
        assert not _alive(pid), "remote process still running after the stream was closed"
    finally:
        await host.close()


async def test_cancelling_a_task_reading_a_stream_ends_the_remote_process(ssh_profile, tmp_path):
    host = SSHHost(ssh_profile)
    pidfile = tmp_path / "pid"
    try:
        async def consume():
            async with host.stream(["sh", "-c", f"echo $$ > {pidfile}; exec tail -f /dev/null"]) as s:
                async for _ in s:
                    pass

        task = asyncio.create_task(consume())
        for _ in range(600):  # up to 30 s: the remote shell starts over SSH
            if pidfile.exists() and pidfile.read_text().strip():
                break
            await asyncio.sleep(0.05)
        pid = int(pidfile.read_text())
        assert _alive(pid)
        task.cancel()
        with pytest.raises(asyncio.CancelledError):
            await task
        deadline = time.monotonic() + 15  # a bound for a busy machine, not a speed check
        while time.monotonic() < deadline and _alive(pid):
            await asyncio.sleep(0.05)
        assert not _alive(pid), "tail -f survived the cancelled stream"
    finally:
        await host.close()


async def test_stream_reports_exit_status_when_the_command_ends(ssh_profile):
    host = SSHHost(ssh_profile)
    try:
        async with host.stream(["sh", "-c", "echo a; echo b; echo oops >&2; exit 3"]) as stream:
            lines = [line async for line in stream]
        assert lines == ["a", "b"]
        assert stream.returncode == 3
        assert stream.stderr_tail == ["oops"]
    finally:
        await host.close()


async def test_many_channels_share_one_connection(ssh_profile):
    host = SSHHost(ssh_profile)
    try:
        results = await asyncio.gather(*(host.run(["echo", str(i)]) for i in range(20)))
        assert [r.stdout.strip() for r in results] == [str(i) for i in range(20)]
        conn = host._conn
        await host.run(["true"])
        assert host._conn is conn
    finally:
        await host.close()


async def test_command_timeout_is_named(ssh_profile):
    host = SSHHost(ssh_profile)
    try:
        with pytest.raises(HostError) as info:
            await host.run(["sleep", "30"], timeout=0.5)
        assert info.value.kind == "command-timeout"
    finally:
        await host.close()


async def test_unknown_host_key_is_refused_with_fingerprint(sshd, gpudeck_home):
    profile = profile_from_dict("stranger", {"transport": "ssh", "ssh": {
        "host": "gpudeck-test", "config_file": str(sshd.ssh_config)}})
    host = SSHHost(profile)  # no known_hosts entry written
    with pytest.raises(HostKeyUnknown) as info:
        await host.run(["true"])
    expected = _fingerprint(sshd.host_key_pub)
    assert info.value.fingerprint == expected
    assert "gpudeck profiles trust stranger" in str(info.value)
    assert host.status.state == "down"


async def test_wrong_client_key_is_an_auth_error(ssh_profile, tmp_path):
    import subprocess

    other = tmp_path / "other_key"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(other)], check=True)
    ssh_profile.ssh.identity_file = str(other)
    # identity_file in the profile takes precedence over the config's IdentityFile
    host = SSHHost(ssh_profile)
    with pytest.raises(HostError) as info:
        await host.run(["true"])
    assert info.value.kind == "auth"


async def test_wrong_port_is_refused_error(sshd, gpudeck_home):
    from tests.realparts import free_port

    profile = profile_from_dict("nowhere", {"transport": "ssh", "ssh": {
        "host": "127.0.0.1", "port": free_port(), "connect_timeout_s": 3}})
    with pytest.raises(HostError) as info:
        await SSHHost(profile).run(["true"])
    assert info.value.kind == "refused"


async def test_unresolvable_host_is_dns_error(gpudeck_home):
    profile = profile_from_dict("nodns", {"transport": "ssh", "ssh": {
        "host": "no-such-host.invalid", "connect_timeout_s": 3}})
    with pytest.raises(HostError) as info:
        await SSHHost(profile).run(["true"])
    assert info.value.kind == "dns"


async def test_reconnects_after_sshd_restart(ssh_profile, sshd):
    host = SSHHost(ssh_profile)
    states = []
    host.on_status(lambda st: states.append(st.state))
    try:
        assert (await host.run(["echo", "before"])).stdout == "before\n"
        first = host._conn
        sshd.restart()  # every connection is killed, then a new listener starts
        # the next call may fail once with a named error, then must succeed
        deadline = time.monotonic() + 20
        result = None
        while time.monotonic() < deadline:
            try:
                result = await host.run(["echo", "after"], timeout=5)
                break
            except HostError:
                await asyncio.sleep(0.2)
        assert result is not None and result.stdout == "after\n"
        assert host._conn is not first, "no new connection was made"
        assert "down" in states and states[-1] == "connected"
    finally:
        await host.close()


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    try:
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split()[2] != "Z"
    except OSError:
        return False


def _fingerprint(pub_path) -> str:
    import asyncssh

    return asyncssh.read_public_key(str(pub_path)).get_fingerprint()
