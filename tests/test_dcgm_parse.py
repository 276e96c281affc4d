"""DCGM exporter pages -> GPUs, on real exporter output from public issues and NVIDIA's docs."""
from __future__ import annotations

from pathlib import Path

import pytest

from console.gpus.dcgm import clean, fold, parse_exposition, xid_meaning
from console.gpus.flags import FlagTracker
from console.gpus.model import NA

FIXTURES = Path(__file__).parent / "fixtures" / "dcgm"


def snapshots(name: str):
    return fold(parse_exposition((FIXTURES / name).read_text()))


def test_v100_page_gives_four_gpus_with_what_the_page_says_and_na_for_the_rest():
    snaps = snapshots("v100-4gpu-help-type.prom")
    assert list(snaps) == ["r6i3n0"]
    gpus = snaps["r6i3n0"].gpus
    assert [g.index for g in gpus] == [0, 1, 2, 3]
    assert {g.name for g in gpus} == {"Tesla V100-SXM2-32GB"}
    assert gpus[0].util_gpu_pct == 0                 # reported as 0: a real zero
    assert gpus[1].util_gpu_pct is NA                # not in the excerpt: unknown, not 0
    assert gpus[2].power_limit_w == 300.0
    assert gpus[0].memory_used_mib is NA and gpus[0].memory_total_mib is NA
    assert snaps["r6i3n0"].processes_known is False   # DCGM has no process list


def test_a100_whole_gpu_row_wins_over_its_mig_instances():
    snap = snapshots("a100-mig-ub20.prom")["ub20-a100-k8s"]
    (gpu,) = snap.gpus
    assert gpu.uuid == "GPU-34319582-d595-d1c7-d1d2-179bcfa61660"
    assert gpu.memory_used_mib == 4845
    assert gpu.memory_total_mib == 4845 + 35690      # used + free when FB_TOTAL is not exported
    assert gpu.power_draw_w == 409.69 and gpu.temperature_c == 61 and gpu.sm_clock_mhz == 1215
    assert gpu.xid == 0
    assert gpu.name is NA                            # this older exporter sends no modelName
    assert [m.gi for m in gpu.mig_devices] == [13] and gpu.mig_devices[0].profile == "1g.5gb"


def test_mig_only_page_keeps_device_wide_values_and_leaves_memory_unknown():
    snap = snapshots("a30-mig-only.prom")["yg-data-k8s-gpu-a30-node-test-test0003.mt"]
    assert [g.index for g in snap.gpus] == [0, 1]
    assert snap.gpus[0].sm_clock_mhz == 1440
    assert snap.gpus[0].util_gpu_pct is NA and snap.gpus[0].memory_used_mib is NA
    assert [m.gi for m in snap.gpus[0].mig_devices] == [3, 4, 5, 6]


def test_kubernetes_labels_become_workloads_and_masked_uuids_do_not_merge_gpus():
    snap = snapshots("h100-k8s-pods.prom")["***h100-007"]
    assert [g.index for g in snap.gpus] == [0, 1, 2, 3]
    assert snap.gpus[1].workloads == ["***/ollama-76f687f4cd-xcvvp"]
    assert snap.gpus[0].workloads == []
    assert snap.gpus[1].bus_id == "00000000:40:00.0"


def test_xid_becomes_a_flag_with_its_code_and_meaning():
    page = ('DCGM_FI_DEV_XID_ERRORS{gpu="0",UUID="GPU-1",Hostname="n1"} 79\n'
            'DCGM_FI_DEV_XID_ERRORS{gpu="1",UUID="GPU-2",Hostname="n1"} 0\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1"} 3\n')
    snap = FlagTracker().apply(fold(parse_exposition(page))["n1"])
    assert "xid-79" in snap.gpus[0].flags
    assert not any(f.startswith("xid") for f in snap.gpus[1].flags)
    assert "fallen off the bus" in xid_meaning(79)


def test_stale_counter_rule_applies_to_dcgm_without_a_process_list():
    page = ('DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="n1"} 100\n'
            'DCGM_FI_DEV_FB_USED{gpu="0",UUID="GPU-1",Hostname="n1"} 0\n'
            'DCGM_FI_DEV_FB_FREE{gpu="0",UUID="GPU-1",Hostname="n1"} 97000\n'
            'DCGM_FI_DEV_GPU_UTIL{gpu="1",UUID="GPU-2",Hostname="n1"} 100\n'
            'DCGM_FI_DEV_FB_USED{gpu="1",UUID="GPU-2",Hostname="n1"} 80000\n')
    tracker = FlagTracker(stale_after=3)
    for _ in range(3):
        snap = tracker.apply(fold(parse_exposition(page))["n1"])
    assert "stale" in snap.gpus[0].flags            # 100% at 0 MiB: a counter, not work
    assert "stale" not in snap.gpus[1].flags        # 100% with 80 GB in use is work


def test_hostile_label_values_reach_nothing_raw():
    page = 'DCGM_FI_DEV_GPU_UTIL{gpu="0",UUID="GPU-1",Hostname="evil\\u001b]52;c;aGk=\\u0007",modelName="x\\u009b2J"} 5\n'
    text = page.encode().decode("unicode_escape")
    snaps = fold(parse_exposition(text))
    (host,) = snaps
    assert "\x1b" not in host and "\x07" not in host
    assert "\x9b" not in snaps[host].gpus[0].name
    assert clean("a\nb") == "a?b"


@pytest.mark.parametrize("text", ["DCGM_FI_DEV_GPU_UTIL{gpu=\"0\" 5\n", "not a metric page at all {{{\n"])
def test_malformed_page_is_refused_with_a_reason(text):
    with pytest.raises(ValueError, match="not Prometheus text format"):
        parse_exposition(text)


def test_the_simulated_exporter_speaks_like_the_real_one(tmp_path):
    """Same HELP/TYPE lines and the real label set as the real V100 page, for the metrics both publish."""
    from console.sim.dcgm import SimExporter

    def families(text):
        helps, types, labels = {}, {}, {}
        for line in text.splitlines():
            if line.startswith("# HELP "):
                name, _, rest = line[7:].partition(" ")
                helps[name] = rest
            elif line.startswith("# TYPE "):
                name, _, rest = line[7:].partition(" ")
                types[name] = rest
        for s in parse_exposition(text):
            labels.setdefault(s.name, set()).update(s.labels)
        return helps, types, labels

    real_help, real_type, real_labels = families((FIXTURES / "v100-4gpu-help-type.prom").read_text())
    sim_help, sim_type, sim_labels = families(SimExporter(0, tmp_path, "H100", 2).page())
    shared = set(real_help) & set(sim_help)
    assert {"DCGM_FI_DEV_GPU_UTIL", "DCGM_FI_DEV_PCIE_REPLAY_COUNTER"} <= shared
    for name in shared:
        assert sim_help[name] == real_help[name] and sim_type[name] == real_type[name]
    for name in set(real_labels) & set(sim_labels):
        assert real_labels[name] <= sim_labels[name], name


def test_secrets_come_from_the_environment_or_a_file_and_missing_ones_are_named(tmp_path, monkeypatch):
    from console.gpus.prometheus import PrometheusError, PromSettings, auth_for

    monkeypatch.delenv("GPUDECK_TEST_TOKEN", raising=False)
    with pytest.raises(PrometheusError, match="GPUDECK_TEST_TOKEN is not set"):
        auth_for(PromSettings(url="http://p", bearer_token_env="GPUDECK_TEST_TOKEN"))
    monkeypatch.setenv("GPUDECK_TEST_TOKEN", "t0k")
    headers, _ = auth_for(PromSettings(url="http://p", bearer_token_env="GPUDECK_TEST_TOKEN"))
    assert headers["Authorization"] == "Bearer t0k"
    token = tmp_path / "token"
    token.write_text("from-file\n")
    headers, _ = auth_for(PromSettings(url="http://p", bearer_token_file=str(token)))
    assert headers["Authorization"] == "Bearer from-file"
    with pytest.raises(PrometheusError, match="cannot read"):
        auth_for(PromSettings(url="http://p", bearer_token_file=str(tmp_path / "missing")))
