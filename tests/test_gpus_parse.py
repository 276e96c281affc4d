"""Parsers on gpudeck's own nvidia-smi fixtures (tests/fixtures/nvidia-smi)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from console.gpus import NA, parse_text
from console.gpus.fields import GPU_FIELDS
from console.gpus.parse_csv import BadLine, parse_app_line, parse_gpu_line, split_row
from console.gpus.values import number

FIXTURES = Path(__file__).parent / "fixtures" / "nvidia-smi"


def parse(name: str):
    return parse_text((FIXTURES / name).read_text())


def test_na_is_one_value_that_prints_na_and_serialises_to_null():
    assert str(NA) == "N/A"
    assert f"{NA:>5}" == "  N/A"
    assert not NA
    assert json.loads(json.dumps({"v": NA.to_json()})) == {"v": None}
    for text in ("[N/A]", "N/A", "[Not Supported]", "[Unknown Error]", "[GPU requires reset]", "ERR!"):
        assert number(text) is NA, text
    assert number("0") == 0 and number("0 %") == 0 and number("76.12 W") == 76.12


def test_noheader_line_in_gpudeck_field_order():
    line = ("8, 3, GPU-aa, NVIDIA H200, 00000000:99:00.0, 100, 0, 0, 143771, 27, 76.50, 700.00, "
            "1980, 1980, P0, 0x0000000000000004")
    gpu = parse_gpu_line(line, GPU_FIELDS)
    assert (gpu.index, gpu.name, gpu.util_gpu_pct, gpu.memory_used_mib) == (3, "NVIDIA H200", 100, 0)
    assert gpu.power_draw_w == 76.5 and gpu.sm_clock_max_mhz == 1980 and gpu.throttle_mask == 4


@pytest.mark.parametrize("line", [
    "8, 3, GPU-aa, NVIDIA H200, 00000000:99:00.0, 100, 0, 0, 143771, 27",            # cut short
    "8, 3, GPU-aa, NVIDIA H200, 00000000:99:00.0, 100, 0, 0, 143771, 27, 76.50, 700.00, "
    "1980, 1980, P0, 0x4, 12",                                                         # one too many
    "",
])
def test_a_line_with_the_wrong_column_count_is_rejected_whole(line):
    with pytest.raises(BadLine):
        parse_gpu_line(line, GPU_FIELDS)


def test_process_name_may_contain_the_separator():
    proc = parse_app_line("4410, GPU-aa, 1721, python train.py --tags a, b")
    assert (proc.pid, proc.gpu_uuid, proc.used_memory_mib, proc.name) == (4410, "GPU-aa", 1721, "python train.py --tags a, b")
    with pytest.raises(BadLine):
        parse_app_line("4410, GPU-aa")
    with pytest.raises(BadLine):
        split_row("a, b", 3)


def test_table_stale_after_crash_fixture():
    snap = parse("table-8x-stale-after-crash.txt")
    assert snap.state == "ok" and len(snap.gpus) == 8
    assert snap.processes_known and snap.processes == []
    assert [g.index for g in snap.gpus if "stale" in g.flags] == [0, 1, 2, 3, 4, 5, 6]
    assert snap.gpus[7].flags == ["idle"] and snap.gpus[7].pstate == "P8"
    assert snap.summary() == "8 · 7 STALE"
    assert snap.gpus[0].memory_total_mib == 97887 and snap.gpus[0].power_limit_w == 600


def test_table_old_layout_with_quote_markers_err_and_orphan_memory():
    snap = parse("table-470-v100-old-layout.txt")
    assert snap.state == "ok" and [g.index for g in snap.gpus] == [0, 1]
    v0, v1 = snap.gpus
    assert (v0.util_gpu_pct, v0.memory_used_mib, v0.power_draw_w) == (97, 15630, 258)
    assert v1.power_draw_w is NA and v1.power_limit_w == 300   # ERR! is unknown, not 0
    assert "busy" in v0.flags and "orphan-memory" not in v0.flags
    assert {"orphan-memory", "hot"} <= set(v1.flags)            # 2210 MiB held, no process, 89C
    assert [(p.pid, p.gpu_index, p.used_memory_mib) for p in snap.processes] == [(23817, 0, 15627)]


def test_table_processes_without_gi_ci_columns():
    snap = parse("table-440-processes-without-gi-ci.txt")
    assert [(p.pid, p.type, p.name, p.used_memory_mib) for p in snap.processes] == [
        (1204, "G", "/usr/lib/xorg/Xorg", 158), (4410, "C", "/opt/conda/bin/python train.py --bs 64", 1721)]
    assert snap.gpus[0].name == "GeForce GTX 108..." and snap.gpus[0].util_gpu_pct == 2


def test_csv_with_header_and_units_rejects_the_truncated_row():
    snap = parse("csv-header-units-2x-one-truncated.txt")
    assert snap.state == "ok" and snap.rejected_lines == 1
    assert [g.index for g in snap.gpus] == [0]
    g = snap.gpus[0]
    assert (g.util_gpu_pct, g.memory_used_mib, g.power_draw_w, g.pstate) == (64, 18544, 141.93, "P0")
    assert "rejected" in snap.message


def test_csv_noheader_drops_a_cut_off_last_sample():
    snap = parse("csv-noheader-nounits-gpudeck-fields.txt")
    assert [g.index for g in snap.gpus] == [0, 1]
    assert snap.gpus[0].throttle_reasons == ["power cap"] and "throttled" in snap.gpus[0].flags
    assert snap.rejected_lines == 1 and "incomplete" in snap.message


def test_compute_apps_csv_with_header_and_units():
    snap = parse("apps-csv-header-units.txt")
    assert snap.state == "ok" and snap.gpus == [] and snap.processes_known
    assert [(p.pid, p.used_memory_mib) for p in snap.processes] == [(51234, 71234), (51240, 70990)]
    assert snap.processes[1].gpu_uuid == "GPU-dd000001-0000-4000-8000-000000000001"


@pytest.mark.parametrize("name, state, needle", [
    ("error-driver-mismatch.txt", "no-driver", "Driver/library version mismatch"),
    ("error-couldnt-communicate.txt", "no-driver", "couldn't communicate"),
])
def test_error_texts(name, state, needle):
    snap = parse(name)
    assert snap.state == state and needle in snap.message and snap.gpus == []


@pytest.mark.parametrize("text, state", [
    ("No devices were found\n", "no-devices"),
    ("Unable to determine the device handle for GPU 0000:3B:00.0: Unknown Error\n", "gpu-error"),
    ("Unable to determine the device handle for GPU0000:3B:00.0: GPU is lost.  Reboot the system\n", "gpu-lost"),
    ("Failed to initialize NVML: Unknown Error\n", "no-driver"),
    ("bash: nvidia-smi: command not found\n", "no-driver"),
    ("hello world\n", "unparsed"),
    ("", "unparsed"),
    ("1, 2, 3\n", "unparsed"),
])
def test_error_states_from_text(text, state):
    assert parse_text(text).state == state
