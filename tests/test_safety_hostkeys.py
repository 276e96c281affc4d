"""Host keys are checked as OpenSSH checks them, against the real sshd.

OpenSSH looks a host up in known_hosts by its name (HostName, `[name]:port` off
port 22) or by HostKeyAlias, never by the address the name resolves to. A key
that differs from a known one is CHANGED, which is not the same as unknown.
"""
from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from console.hosts import HostKeyChanged, HostKeyUnknown, SSHHost, ssh_target
from profiles.atomic import write_atomic
from profiles.paths import known_hosts_file
from profiles.profile import profile_from_dict
from tests.cli import gpudeck

ROOT = Path(__file__).resolve().parent.parent


def _fingerprint(pub: Path) -> str:
    out = subprocess.run(["ssh-keygen", "-lf", str(pub)], capture_output=True, text=True, check=True).stdout
    return out.split()[1]


@pytest.fixture(scope="module")
def other_key(tmp_path_factory) -> Path:
    """A host key the sshd does not have (what an impostor or a reinstalled host offers)."""
    key = tmp_path_factory.mktemp("otherkey") / "other_ed25519"
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    return key.with_suffix(".pub")


def _entry(pattern: str, pub: Path) -> str:
    algorithm, blob = pub.read_text().split()[:2]
    return f"{pattern} {algorithm} {blob}\n"


def _config(sshd, tmp_path: Path, extra: str = "", hostname: str = "localhost") -> Path:
    config = tmp_path / "ssh_config"
    config.write_text(f"Host box\n  HostName {hostname}\n  Port {sshd.port}\n  User {sshd.user}\n"
                      f"  IdentityFile {sshd.client_key}\n{extra}")
    return config


def _profile(config: Path):
    return profile_from_dict("box", {"transport": "ssh", "ssh": {"host": "box", "config_file": str(config),
                                                                  "connect_timeout_s": 5}})


async def _connect(profile):
    host = SSHHost(profile)
    try:
        return (await host.run(["true"])).returncode
    finally:
        await host.close()


async def test_a_different_key_under_the_name_is_changed_even_if_the_address_entry_matches(
        sshd, gpudeck_home, tmp_path, other_key):
    profile = _profile(_config(sshd, tmp_path))
    write_atomic(known_hosts_file(), _entry(f"[localhost]:{sshd.port}", other_key)
                 + _entry(f"[127.0.0.1]:{sshd.port}", sshd.host_key_pub))
    with pytest.raises(HostKeyChanged) as info:
        await _connect(profile)
    message = str(info.value)
    assert "host key CHANGED" in message
    assert _fingerprint(other_key) in message and _fingerprint(sshd.host_key_pub) in message
    assert info.value.known == [_fingerprint(other_key)]
    assert "--replace" in message


async def test_a_name_without_an_entry_is_unknown_even_if_its_address_has_one(sshd, gpudeck_home, tmp_path):
    profile = _profile(_config(sshd, tmp_path))
    write_atomic(known_hosts_file(), _entry(f"[127.0.0.1]:{sshd.port}", sshd.host_key_pub))
    with pytest.raises(HostKeyUnknown) as info:
        await _connect(profile)
    assert "CHANGED" not in str(info.value) and info.value.fingerprint == _fingerprint(sshd.host_key_pub)


async def test_an_entry_for_another_port_does_not_count(sshd, gpudeck_home, tmp_path):
    profile = _profile(_config(sshd, tmp_path, hostname="127.0.0.1"))
    write_atomic(known_hosts_file(), _entry("127.0.0.1", sshd.host_key_pub))  # port 22's entry
    with pytest.raises(HostKeyUnknown):
        await _connect(profile)


async def test_host_key_alias_is_the_name_looked_up(sshd, gpudeck_home, tmp_path, other_key):
    profile = _profile(_config(sshd, tmp_path, "  HostKeyAlias gpubox-key\n", hostname="127.0.0.1"))
    assert ssh_target(profile).key_name == "gpubox-key"
    write_atomic(known_hosts_file(), _entry(f"[127.0.0.1]:{sshd.port}", sshd.host_key_pub))
    with pytest.raises(HostKeyUnknown):  # OpenSSH ignores the host's own entry when an alias is set
        await _connect(profile)
    write_atomic(known_hosts_file(), _entry("gpubox-key", other_key))
    with pytest.raises(HostKeyChanged):
        await _connect(profile)
    write_atomic(known_hosts_file(), _entry("gpubox-key", sshd.host_key_pub))
    assert await _connect(profile) == 0


def test_trust_replaces_a_changed_key_only_with_replace(sshd, gpudeck_home, tmp_path, other_key):
    config = _config(sshd, tmp_path, hostname="127.0.0.1")
    assert gpudeck("profiles", "add", "box", "--ssh", "box", "--ssh-config", str(config), home=gpudeck_home).returncode == 0
    old = _entry(f"[127.0.0.1]:{sshd.port}", other_key)
    write_atomic(known_hosts_file(), "# mine\n" + old)
    refused = gpudeck("profiles", "trust", "box", "--yes", home=gpudeck_home)
    assert refused.returncode == 1
    line = refused.stderr.strip()
    assert "\n" not in line and "host key CHANGED" in line and "--replace" in line
    assert _fingerprint(other_key) in line and _fingerprint(sshd.host_key_pub) in line
    assert known_hosts_file().read_text() == "# mine\n" + old  # nothing added beside it
    assert gpudeck("profiles", "check", "box", home=gpudeck_home).returncode == 1

    replaced = gpudeck("profiles", "trust", "box", "--yes", "--replace", "--json", home=gpudeck_home)
    assert replaced.returncode == 0, replaced.stderr
    doc = json.loads(replaced.stdout)
    assert doc["replaced"] == [_fingerprint(other_key)] and doc["name"] == f"[127.0.0.1]:{sshd.port}"
    assert known_hosts_file().read_text() == "# mine\n" + _entry(f"[127.0.0.1]:{sshd.port}", sshd.host_key_pub)
    assert gpudeck("profiles", "check", "box", home=gpudeck_home).returncode == 0
    again = gpudeck("profiles", "trust", "box", "--yes", "--json", home=gpudeck_home)
    assert again.returncode == 0 and json.loads(again.stdout)["already_trusted"] is True
    assert known_hosts_file().read_text().count(f"[127.0.0.1]:{sshd.port}") == 1


def test_trust_resolves_an_alias_through_the_users_ssh_config(sshd, gpudeck_home, tmp_path):
    """`profiles trust ALIAS` goes where `profiles check` goes: the alias from ~/.ssh/config."""
    user_home = tmp_path / "user"
    (user_home / ".ssh").mkdir(parents=True)
    (user_home / ".ssh" / "config").write_text(_config(sshd, tmp_path, hostname="127.0.0.1").read_text())
    assert gpudeck("profiles", "add", "box", "--ssh", "box", home=gpudeck_home, env={"HOME": str(user_home)}).returncode == 0
    check = gpudeck("profiles", "check", "box", "--json", home=gpudeck_home, env={"HOME": str(user_home)})
    assert json.loads(check.stdout)["error_kind"] == "host-key", check.stdout
    trust = gpudeck("profiles", "trust", "box", "--yes", "--json", home=gpudeck_home, env={"HOME": str(user_home)})
    assert trust.returncode == 0, trust.stderr
    doc = json.loads(trust.stdout)
    assert (doc["host"], doc["port"]) == ("127.0.0.1", sshd.port)
    assert doc["fingerprint"] == _fingerprint(sshd.host_key_pub)
    check = gpudeck("profiles", "check", "box", "--json", home=gpudeck_home, env={"HOME": str(user_home)})
    assert json.loads(check.stdout)["reachable"] is True, check.stdout
