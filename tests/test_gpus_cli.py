"""`gpudeck gpus` as a user runs it: JSON shape, exit codes, one-line errors."""
from __future__ import annotations

import json
from pathlib import Path

from tests.cli import gpudeck, json_out
from tests.conftest import SHARED
from tests.gpus_standin import FIXTURES, standin_command

ROOT = Path(__file__).resolve().parent.parent
ISSUE_GPU_KEYS = {"index", "name", "bus_id", "utilization_gpu_pct", "memory_used_mib", "memory_total_mib",
                  "temperature_c", "power_draw_w", "power_limit_w", "pstate", "flags"}
ISSUE_PROC_KEYS = {"gpu_index", "pid", "type", "name", "used_memory_mib"}


def test_parse_json_has_the_issue_shape():
    res = gpudeck("gpus", "--parse", str(SHARED / "corpus/nvidia-smi/03-table-l40s-one-python-process-driver-580.txt"),
                  "--json", text=False)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["state"] == "ok" and isinstance(doc["message"], str)
    gpu = doc["gpus"][0]
    assert ISSUE_GPU_KEYS <= set(gpu)
    assert (gpu["index"], gpu["name"], gpu["bus_id"], gpu["utilization_gpu_pct"], gpu["memory_used_mib"],
            gpu["memory_total_mib"], gpu["temperature_c"], gpu["power_draw_w"], gpu["power_limit_w"],
            gpu["pstate"]) == (0, "NVIDIA L40S", "00000000:8D:00.0", 0, 803, 46068, 39, 104, 325, "P0")
    proc = doc["processes"][0]
    assert ISSUE_PROC_KEYS <= set(proc)
    assert (proc["gpu_index"], proc["pid"], proc["type"], proc["name"], proc["used_memory_mib"]) == \
        (0, 5997, "C", "python", 794)


def test_unknown_values_are_null_not_zero():
    res = gpudeck("gpus", "--parse", str(SHARED / "corpus/nvidia-smi/23-table-a100-mig-enabled-gpu-util-na.txt"),
                  "--json", text=False)
    doc = json.loads(res.stdout)
    assert [g["utilization_gpu_pct"] for g in doc["gpus"]] == [None, None]


def test_error_text_is_a_state_not_a_failure():
    res = gpudeck("gpus", "--parse", str(SHARED / "corpus/nvidia-smi/15-error-gpu-is-lost-windows-wrapped.txt"),
                  "--json", text=False)
    assert res.returncode == 0
    doc = json.loads(res.stdout)
    assert doc["state"] == "gpu-lost" and doc["gpus"] == []


def test_unparseable_input_exits_1_with_one_line(tmp_path):
    junk = tmp_path / "junk.txt"
    junk.write_text("this is not nvidia-smi output\nat all\n")
    for extra in ([], ["--json"]):
        res = gpudeck("gpus", "--parse", str(junk), *extra, text=False)
        assert res.returncode == 1
        err = res.stderr.decode()
        assert err.count("\n") == 1 and "unparsed" in err and "Traceback" not in err
    doc = json.loads(gpudeck("gpus", "--parse", str(junk), "--json", text=False).stdout)
    assert doc["state"] == "unparsed"


def test_missing_and_binary_files_exit_1(tmp_path):
    binary = tmp_path / "blob.bin"
    binary.write_bytes(b"\x00\x01\x02nvidia")
    for path in (tmp_path / "absent.txt", binary, tmp_path):
        res = gpudeck("gpus", "--parse", str(path), text=False)
        assert res.returncode == 1 and res.stderr.decode().count("\n") == 1 and b"Traceback" not in res.stderr


def test_parse_from_stdin():
    text = (FIXTURES / "table-8x-stale-after-crash.txt").read_bytes()
    res = gpudeck("gpus", "--parse", "-", stdin=text, text=False)
    assert res.returncode == 0
    assert "7 GPUs read 100%" in res.stdout.decode() and "STALE" in res.stdout.decode()


def test_live_sample_over_ssh(ssh_profile):
    from profiles import store

    ssh_profile.gpu.smi_command = standin_command("ticks-stale-8x.csv", "apps-none.csv")
    store.save(ssh_profile)
    res = gpudeck("gpus", "--profile", "testbox", "--json", text=False)
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    assert doc["state"] == "ok" and len(doc["gpus"]) == 8 and doc["host"] == "testbox"
    assert [g["index"] for g in doc["gpus"] if "stale" in g["flags"]] == list(range(7))
    assert doc["sample_age_s"] is not None and doc["sample_stale"] is False


def test_live_error_exits_nonzero_with_one_line(ssh_profile):
    from profiles import store

    ssh_profile.gpu.smi_command = ["/nonexistent/nvidia-smi"]
    store.save(ssh_profile)
    res = gpudeck("gpus", "--profile", "testbox", text=False)
    assert res.returncode == 1
    assert res.stderr.decode().count("\n") == 1 and "no-driver" in res.stderr.decode()


def test_json_names_the_launch_each_process_belongs_to(gpudeck_home, tmp_path):
    """A real process in the process group of a live launch record is that launch's (config and id, the
    GPUs tab's rule); a process in no launch's group has both null."""
    import os
    import subprocess

    from console.store import launches
    from profiles import store
    from profiles.profile import profile_from_dict

    server = subprocess.Popen(["sleep", "300"], start_new_session=True)   # its own process group, as a launch's
    stranger = subprocess.Popen(["sleep", "300"])
    try:
        apps = tmp_path / "apps.csv"
        apps.write_text("pid, gpu_uuid, used_memory, process_name\n"
                        f"{server.pid}, GPU-aa000000-0000-4000-8000-000000000000, 88330, llama-server\n"
                        f"{stranger.pid}, GPU-aa000001-0000-4000-8000-000000000001, 88330, python3\n")
        store.save(profile_from_dict("box", {"transport": "local", "gpu": {
            "smi_command": standin_command("ticks-busy-8x.csv", None, "--apps", str(apps))}}))
        launches.save("box", launches.LaunchRecord(id="e2e-20261204-101500", config="e2e", script=None, log=None,
                                                   exit_file=None, pid=server.pid, pgid=os.getpgid(server.pid),
                                                   state="ready"))
        res = gpudeck("gpus", "--profile", "box", "--json")
        assert res.returncode == 0, res.stderr
        procs = {p["pid"]: p for p in json.loads(res.stdout)["processes"]}
        assert (procs[server.pid]["config"], procs[server.pid]["launch_id"]) == ("e2e", "e2e-20261204-101500")
        assert (procs[stranger.pid]["config"], procs[stranger.pid]["launch_id"]) == (None, None)
        assert ISSUE_PROC_KEYS <= set(procs[server.pid])
    finally:
        for proc in (server, stranger):
            proc.kill()
            proc.wait()


def test_text_and_json_exit_alike_when_the_gpus_cannot_be_read(tmp_path):
    """No nvidia-smi on the local host: both forms say the GPUs could not be read, and both exit 1."""
    (tmp_path / "sh").symlink_to("/bin/sh")  # a shell, and no nvidia-smi, on the PATH
    results = [gpudeck("gpus", "-p", "local", *extra, env={"PATH": str(tmp_path)}) for extra in ([], ["--json"])]
    assert [r.returncode for r in results] == [1, 1], [r.stderr for r in results]
    assert json_out(results[1])["state"] == "no-driver"
