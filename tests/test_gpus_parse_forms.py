"""More nvidia-smi texts an operator hands to `gpus --parse`: the full query
(`-q`), PowerShell's UTF-16 captures, header-less CSV under the command
line that made it, WSL's process rows without memory; and any input in
bounded memory. Where the fields can't be known, it still refuses."""
from __future__ import annotations

import codecs
import io
import json
import tracemalloc
from pathlib import Path

from console.gpus import NA, parse_text
from console.gpus import parse_input
from console.gpus.parse_input import read_saved_output
from tests.cli import gpudeck

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"


def test_full_query_output_is_read_field_by_field():
    snap = parse_text((FIXTURES / "query-q-rtx-a6000-windows-537.txt").read_text())
    assert snap.state == "ok" and len(snap.gpus) == 1
    gpu = snap.gpus[0]
    assert (gpu.index, gpu.name, gpu.uuid, gpu.bus_id) == (
        0, "NVIDIA RTX A6000", "GPU-43be1050-5a2d-47f9-bf95-a0e7d429b953", "00000000:01:00.0")
    assert (gpu.memory_used_mib, gpu.memory_total_mib, gpu.util_gpu_pct, gpu.util_mem_pct) == (0, 49140, 0, 0)
    assert (gpu.temperature_c, gpu.power_draw_w, gpu.power_limit_w) == (55, 7.82, 300)
    assert (gpu.sm_clock_mhz, gpu.sm_clock_max_mhz, gpu.pstate) == (0, 2100, "P8")
    assert snap.processes_known and snap.processes == []  # "Processes : None"
    assert "driver 537.99" in snap.message


def test_query_of_one_gpu_out_of_four_leaves_the_index_unknown():
    snap = parse_text((FIXTURES / "query-q-gtx1080ti-windows-442-cut.txt").read_text())
    gpu = snap.gpus[0]
    assert gpu.index is NA and gpu.name == "GeForce GTX 1080 Ti"
    assert gpu.memory_used_mib is NA and gpu.util_gpu_pct is NA  # cut off before those sections
    assert not snap.processes_known
    assert "GPU index unknown" in snap.message


def test_query_process_rows_without_memory_are_kept():
    text = "\n".join([
        "==============NVSMI LOG==============",
        "Driver Version                            : 546.01",
        "Attached GPUs                             : 1",
        "GPU 00000000:01:00.0",
        "    Product Name                          : NVIDIA GeForce GTX 970",
        "    FB Memory Usage",
        "        Total                             : 4096 MiB",
        "        Used                              : 3872 MiB",
        "    Processes",
        "        GPU instance ID                   : N/A",
        "        Compute instance ID               : N/A",
        "        Process ID                        : 2490",
        "            Type                          : C",
        "            Name                          : /python3.10",
        "            Used GPU Memory               : Not available in WDDM driver model",
    ])
    snap = parse_text(text)
    assert snap.processes_known and len(snap.processes) == 1
    proc = snap.processes[0]
    assert (proc.pid, proc.type, proc.name, proc.gpu_index) == (2490, "C", "/python3.10", 0)
    assert proc.used_memory_mib is NA


def test_wsl_process_rows_with_memory_na_are_kept():
    table = parse_text((FIXTURES / "table-wsl2-gtx970-processes-memory-na.txt").read_text())
    assert [(p.pid, p.name) for p in table.processes] == [(23, "/Xwayland"), (2490, "/python3.10")]
    assert all(p.used_memory_mib is NA for p in table.processes)
    csv = parse_text((FIXTURES / "apps-csv-wsl-memory-na.csv").read_text())
    assert [p.pid for p in csv.processes] == [23, 2490]
    assert all(p.used_memory_mib is NA for p in csv.processes)


def test_headerless_csv_takes_its_fields_from_the_pasted_command_line():
    text = ("$ nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total "
            "--format=csv,noheader,nounits\n"
            "0, NVIDIA H100 80GB HBM3, 97, 75012, 81559\n"
            "1, NVIDIA H100 80GB HBM3, 95, 74990, 81559\n")
    snap = parse_text(text)
    assert snap.state == "ok"
    assert [(g.index, g.util_gpu_pct, g.memory_used_mib) for g in snap.gpus] == [(0, 97, 75012), (1, 95, 74990)]
    assert snap.gpus[0].temperature_c is NA  # not asked for, so not known
    apps = parse_text("PS C:\\> nvidia-smi --query-compute-apps=pid,process_name,used_memory --format=csv,noheader\n"
                      "2490, /python3.10, [N/A]\n")
    assert [(p.pid, p.name, p.used_memory_mib) for p in apps.processes] == [(2490, "/python3.10", NA)]


def test_headerless_csv_without_its_command_line_is_still_refused():
    rows = "0, NVIDIA H100 80GB HBM3, 97, 75012, 81559\n"
    assert parse_text(rows).state == "unparsed"
    # a command that did not ask for CSV did not make these lines
    assert parse_text("nvidia-smi --query-gpu=index,name,utilization.gpu,memory.used,memory.total\n" + rows).state \
        == "unparsed"


def test_utf16_and_bom_captures_give_the_same_json(tmp_path):
    text = (FIXTURES / "table-wsl2-gtx970-processes-memory-na.txt").read_text()
    plain = gpudeck("gpus", "--parse", "-", "--json", stdin=text.encode(), text=False)
    assert plain.returncode == 0
    expected = json.loads(plain.stdout)
    for name, data in {
        "powershell.txt": codecs.BOM_UTF16_LE + text.replace("\n", "\r\n").encode("utf-16-le"),
        "utf16-nobom.txt": text.encode("utf-16-le"),
        "utf8-bom.txt": codecs.BOM_UTF8 + text.encode(),
    }.items():
        path = tmp_path / name
        path.write_bytes(data)
        proc = gpudeck("gpus", "--parse", str(path), "--json", text=False)
        assert proc.returncode == 0, (name, proc.stderr)
        assert json.loads(proc.stdout) == expected, name


def test_binary_input_is_one_line_refusal(tmp_path):
    path = tmp_path / "core"
    path.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 8)
    proc = gpudeck("gpus", "--parse", str(path), "--json", text=False)
    assert proc.returncode == 1 and proc.stdout == b""
    assert b"binary data" in proc.stderr and len(proc.stderr.strip().splitlines()) == 1


def test_a_huge_line_is_read_in_bounded_memory():
    data = io.BytesIO(b"0, NVIDIA H100, " + b"9" * (48 << 20))
    tracemalloc.start()
    try:
        text, dropped = read_saved_output(data)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert dropped == 0 and len(text) < 20000 and text.startswith("0, NVIDIA H100, ")
    assert peak < 32 << 20, f"peak {peak / 2**20:.0f} MiB for a 48 MiB line"


def test_a_long_loop_keeps_its_head_and_latest_samples(monkeypatch):
    monkeypatch.setattr(parse_input, "HEAD_LINES", 3)
    monkeypatch.setattr(parse_input, "TAIL_LINES", 4)
    lines = ["index, utilization.gpu [%]"] + [f"0, {i % 100} %" for i in range(1000)]
    text, dropped = read_saved_output(io.BytesIO("\n".join(lines).encode()))
    assert dropped == 1001 - 7
    snap = parse_text(text)
    assert snap.gpus[0].util_gpu_pct == 999 % 100  # the last sample
