"""The nvidia-smi stand-in: exact CSV fields, -lms streaming, and what gpudeck's GPU parser makes of it."""
from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path

from console.gpus.parse import parse_text
from console.sim.hardware import find_gpu
from console.sim.shim import install_shim
from console.sim.state import gpu_rows, write_state
from console.sim.config import DEFAULT_MODEL
from tests.cli import gpudeck

SIM = ("sim", "nvidia-smi", "--state-dir")  # then the state folder and nvidia-smi's own arguments
FIELDS = ("index,uuid,name,pci.bus_id,utilization.gpu,utilization.memory,memory.used,memory.total,"
          "temperature.gpu,power.draw,power.limit,clocks.sm,clocks.max.sm,pstate,clocks_event_reasons.active")


def crashed_state(state_dir: Path) -> None:
    """The state a server leaves after an illegal-address crash (as the fault test checks it writes)."""
    rows = gpu_rows(find_gpu("RTX PRO 6000 Blackwell"), 8)
    for row in rows:
        row.update(memory_used_mib=0, utilization_gpu=100 if row["index"] < 7 else 0)
    write_state(state_dir, {"pid": os.getpid(), "port": 1, "model": DEFAULT_MODEL, "status": "crashed",
                            "crash_kind": "illegal-address", "gpus": rows, "processes": []})


def test_query_gpu_csv_has_exactly_the_fields_asked_for(tmp_path):
    out = gpudeck(*SIM, str(tmp_path), f"--query-gpu={FIELDS}", "--format=csv")
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    header = [cell.split(" [")[0] for cell in lines[0].split(", ")]
    assert header == FIELDS.split(",")
    assert "memory.used [MiB]" in lines[0]
    assert len(lines) == 9
    for line in lines[1:]:
        assert len(line.split(", ")) == len(header)
    assert lines[1].split(", ")[2] == "NVIDIA RTX PRO 6000 Blackwell Server Edition"
    bare = gpudeck(*SIM, str(tmp_path), "--query-gpu=index,memory.used,utilization.gpu", "--format=csv,noheader,nounits")
    assert bare.stdout.splitlines()[0] == "0, 3, 0"        # never started: idle at a few MiB


def test_unknown_field_is_refused_like_nvidia_smi(tmp_path):
    out = gpudeck(*SIM, str(tmp_path), "--query-gpu=index,bogus.field", "--format=csv")
    assert out.returncode == 2 and 'Field "bogus.field" is not a valid field' in out.stderr


def test_lms_streams_samples_with_one_header(tmp_path):
    proc = subprocess.Popen([sys.executable, "-m", "console", "sim", "nvidia-smi", "--state-dir", str(tmp_path),
                             "--query-gpu=timestamp,index,utilization.gpu", "--format=csv", "-lms", "200"],
                            stdout=subprocess.PIPE, text=True)
    try:
        lines, started = [], time.monotonic()
        while len(lines) < 1 + 8 * 3:
            lines.append(proc.stdout.readline().rstrip("\n"))
        elapsed = time.monotonic() - started
    finally:
        proc.terminate()
        proc.wait(5)
    assert lines[0] == "timestamp, index, utilization.gpu [%]"
    assert sum(1 for line in lines if line.startswith("timestamp")) == 1
    stamps = sorted({line.split(", ")[0] for line in lines[1:]})
    assert len(stamps) == 3          # three samples, each stamped once per GPU row
    assert elapsed >= 0.3            # the second and third waited for the interval


def test_list_and_compute_apps_forms(tmp_path):
    listed = gpudeck(*SIM, str(tmp_path), "-L").stdout.splitlines()
    assert len(listed) == 8 and listed[0].startswith("GPU 0: NVIDIA RTX PRO 6000 Blackwell Server Edition (UUID: GPU-")
    apps = gpudeck(*SIM, str(tmp_path), "--query-compute-apps=pid,gpu_uuid,used_memory,process_name", "--format=csv")
    assert apps.stdout.splitlines() == ["pid, gpu_uuid, used_memory [MiB], process_name"]


def test_post_crash_picture_parses_and_is_flagged_stale(tmp_path):
    crashed_state(tmp_path)
    table = gpudeck(*SIM, str(tmp_path)).stdout
    assert "SIMULATED" in table.splitlines()[2]
    snap = parse_text(table)
    assert snap.state == "ok" and len(snap.gpus) == 8
    assert snap.flag_count("stale") == 7
    assert snap.summary() == "8 · 7 STALE"
    # The CSV forms the sampler uses, GPUs and compute apps together, over three samples.
    gpus = gpudeck(*SIM, str(tmp_path), f"--query-gpu={FIELDS}", "--format=csv,noheader,nounits", "-lms", "50",
                   "--samples", "3").stdout
    apps = gpudeck(*SIM, str(tmp_path), "--query-compute-apps=pid,gpu_uuid,used_memory,process_name", "--format=csv").stdout
    snap = parse_text(apps + f"{FIELDS.replace(',', ', ')}\n" + gpus)
    assert snap.state == "ok" and len(snap.gpus) == 8, snap.message
    assert [g.memory_used_mib for g in snap.gpus] == [0] * 8
    assert snap.flag_count("stale") == 7


def test_shim_runs_the_stand_in(tmp_path):
    crashed_state(tmp_path / "state")
    shim = install_shim(tmp_path / "bin", tmp_path / "state")
    assert os.access(shim, os.X_OK) and shim.name == "nvidia-smi"
    env = dict(os.environ, PATH=f"{shim.parent}:{os.environ['PATH']}")
    out = subprocess.run(["nvidia-smi", "--query-gpu=index,memory.used,utilization.gpu",
                          "--format=csv,noheader,nounits"], capture_output=True, text=True, env=env, timeout=20)
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines()[0] == "0, 0, 100" and out.stdout.splitlines()[7] == "7, 0, 0"
