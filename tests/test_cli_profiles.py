"""`gpudeck profiles ...` as an operator runs it: a real process, real sshd."""
from __future__ import annotations

import json
import subprocess
import sys
from tests.cli import gpudeck


def test_add_list_show_rm(gpudeck_home):
    r = gpudeck("profiles", "add", "box", "--ssh", "me@10.0.0.5:2200", "--url", "http://127.0.0.1:30000", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["ssh"] == {**doc["ssh"], "host": "10.0.0.5", "user": "me", "port": 2200}
    listing = json.loads(gpudeck("profiles", "list", "--json").stdout)
    assert sorted(p["name"] for p in listing["profiles"]) == ["box", "local"]
    shown = json.loads(gpudeck("profiles", "show", "box", "--json").stdout)
    assert shown["server"]["url"] == "http://127.0.0.1:30000"
    assert gpudeck("profiles", "rm", "box").returncode == 0
    assert gpudeck("profiles", "show", "box").returncode == 1


def test_bad_input_is_one_line_on_stderr(gpudeck_home):
    r = gpudeck("profiles", "add", "bad/name", "--local")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    r = gpudeck("profiles", "show", "nope")
    assert r.returncode == 1 and r.stderr.startswith("gpudeck: no profile named 'nope'")
    assert r.stdout == ""
    (gpudeck_home / "config" / "profiles").mkdir(parents=True, exist_ok=True)
    (gpudeck_home / "config" / "profiles" / "broken.toml").write_text("[ssh\n")
    r = gpudeck("profiles", "show", "broken")
    assert r.returncode == 1 and "broken.toml:1" in r.stderr and "Traceback" not in r.stderr


def test_check_reports_the_test_sshd(ssh_profile):
    r = gpudeck("profiles", "check", "testbox", "--json")
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert doc["reachable"] is True
    assert doc["kernel"].startswith("Linux ")
    assert doc["latency_ms"] > 0
    # this box has no nvidia-smi: the count is unknown, not 0, and the reason is given
    assert doc["gpu_count"] is None and doc["gpu_note"] == "nvidia-smi not found on PATH"


def test_check_names_the_reason_it_failed(gpudeck_home):
    from tests.realparts import free_port

    gpudeck("profiles", "add", "closed", "--ssh", f"127.0.0.1:{free_port()}")
    r = gpudeck("profiles", "check", "closed", "--json")
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["reachable"] is False and doc["error_kind"] == "refused"


def test_trust_records_the_key_and_then_connects(sshd, gpudeck_home):
    gpudeck("profiles", "add", "fresh", "--ssh", "gpudeck-test", "--ssh-config", str(sshd.ssh_config))
    r = gpudeck("profiles", "check", "fresh", "--json")
    assert json.loads(r.stdout)["error_kind"] == "host-key"
    assert "gpudeck profiles trust fresh" in json.loads(r.stdout)["error"]
    r = gpudeck("profiles", "trust", "fresh")  # no tty, no --yes: refused with the fingerprint
    assert r.returncode == 1 and "SHA256:" in r.stderr
    r = gpudeck("profiles", "trust", "fresh", "--yes", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["fingerprint"].startswith("SHA256:")
    r = gpudeck("profiles", "check", "fresh", "--json")
    assert json.loads(r.stdout)["reachable"] is True, r.stdout


def test_help_is_quick_and_imports_no_textual(gpudeck_home):
    code = ("import sys, time; t=time.perf_counter(); from console.cli import build_parser; build_parser(); "
            "print(sorted(m for m in ('textual','asyncssh','httpx','aiohttp') if m in sys.modules))")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert r.stdout.strip() == "[]", r.stdout + r.stderr


def test_add_force_keeps_the_description_unless_given_a_new_one(gpudeck_home):
    assert gpudeck("profiles", "add", "box", "--local", "--description", "8x H200 lab").returncode == 0
    r = gpudeck("profiles", "add", "box", "--local", "--url", "http://127.0.0.1:30000", "--force", "--json")
    assert r.returncode == 0, r.stderr
    shown = json.loads(gpudeck("profiles", "show", "box", "--json").stdout)
    assert shown["description"] == "8x H200 lab" and shown["server"]["url"] == "http://127.0.0.1:30000"
    assert gpudeck("profiles", "add", "box", "--local", "--description", "moved", "--force").returncode == 0
    assert json.loads(gpudeck("profiles", "show", "box", "--json").stdout)["description"] == "moved"
