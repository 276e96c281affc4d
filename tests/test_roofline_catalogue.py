"""The GPU catalogue is data: packaged entries, user additions, nvidia-smi names."""
from __future__ import annotations

import pytest

from console import roofline

REQUIRED = ["H100 SXM", "H100 PCIe", "H200", "B200", "GB200", "A100", "L40S", "RTX PRO 6000 Blackwell",
            "RTX 5090", "RTX 4090", "MI300X",
            # the GPUs operators run beyond the first list
            "H20", "H800", "A800", "L4", "L40", "A10", "A10G", "A30", "B300", "GB300", "GH200", "MI325X", "MI355X"]


@pytest.mark.parametrize("name", REQUIRED)
def test_catalogue_covers(name):
    gpu = roofline.find_gpu(name)
    assert gpu.bandwidth_gbs > 0 and gpu.memory_gb > 0 and gpu.tflops["bf16"] > 0
    assert gpu.allreduce_alpha_us >= 0 and gpu.allreduce_beta_gbs > 0
    assert gpu.interconnect


@pytest.mark.parametrize("smi_name,key", [
    ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA RTX PRO 6000 Blackwell Workstation Edition", "rtx-pro-6000-blackwell"),
    ("NVIDIA H100 80GB HBM3", "h100-sxm"),
    ("NVIDIA H100 PCIe", "h100-pcie"),
    ("NVIDIA H100 NVL", "h100-nvl"),
    ("NVIDIA A100-SXM4-80GB", "a100-sxm-80gb"),
    ("NVIDIA A100-SXM4-40GB", "a100-sxm-40gb"),
    ("NVIDIA GeForce RTX 4090", "rtx-4090"),
    ("NVIDIA GeForce RTX 5090", "rtx-5090"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA L40S", "l40s"),
    # PCIe and SXM, 40 and 80 GB: never the other form factor or size
    ("NVIDIA A100-PCIE-40GB", "a100-pcie-40gb"),
    ("NVIDIA A100 80GB PCIe", "a100-pcie-80gb"),
    ("NVIDIA H800", "h800-sxm"),
    ("NVIDIA H800 PCIe", "h800-pcie"),
    ("NVIDIA A800-SXM4-80GB", "a800-sxm-80gb"),
    ("NVIDIA A800 80GB PCIe", "a800-pcie-80gb"),
    ("NVIDIA H20", "h20"),
    ("NVIDIA H200 NVL", "h200-nvl"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA L40", "l40"),
    ("NVIDIA A10", "a10"),
    ("NVIDIA A10G", "a10g"),
    ("NVIDIA A30", "a30"),
    ("NVIDIA B300 SXM6 AC", "b300"),
    ("NVIDIA GB300", "gb300"),
    ("NVIDIA GH200 480GB", "gh200"),
    ("NVIDIA GH200 144G HBM3e", "gh200-144g"),
    ("AMD Instinct MI325X", "mi325x"),
    ("AMD Instinct MI355X", "mi355x"),
])
def test_nvidia_smi_names_match(smi_name, key):
    assert roofline.find_gpu(smi_name).key == key


def test_a100_pcie_40gb_is_not_the_sxm_entry():
    gpu = roofline.find_gpu("NVIDIA A100-PCIE-40GB")
    assert not gpu.has_nvlink and gpu.bandwidth_gbs == 1555 and gpu.interconnect.startswith("PCIe")


def test_every_packaged_figure_names_its_source():
    for gpu in roofline.load_catalogue():
        for figure in ("memory_gb", "bandwidth_gbs", "tflops", "link_gbs", "allreduce"):
            assert gpu.figures_from.get(figure), (gpu.key, figure)


def test_memory_is_what_nvidia_smi_reports_where_the_corpus_has_a_reading(shared_dir):
    """memory.total in MiB, as the project's nvidia-smi corpus shows it, is the catalogue's GB."""
    import re

    readings = {"01-table-8x-h200-idle-no-processes.txt": "h200", "09-table-2x-h100-80gb-hbm3-driver-570.txt": "h100-sxm",
                "03-table-l40s-one-python-process-driver-580.txt": "l40s", "29-table-b200-serving-trtllm-driver-580.txt": "b200"}
    catalogue = {g.key: g for g in roofline.load_catalogue()}
    for name, key in readings.items():
        text = (shared_dir / "corpus" / "nvidia-smi" / name).read_text()
        mib = int(re.search(r"/\s*(\d+)MiB \|", text).group(1))
        assert catalogue[key].memory_gb == pytest.approx(mib * 1.048576 / 1000, abs=0.05), key
        assert "nvidia-smi" in catalogue[key].figures_from["memory_gb"]


def test_b200_bandwidth_is_the_hgx_figure():
    gpu = roofline.find_gpu("NVIDIA B200")
    assert gpu.bandwidth_gbs == 7700 and "62 TB/s" in gpu.figures_from["bandwidth_gbs"]


def test_assumptions_say_where_the_bandwidth_comes_from(shared_dir):
    facts = roofline.load_model(shared_dir / "model-configs" / "Llama-3.1-8B.json")
    r = roofline.compute(facts, "NVIDIA H20", 1)
    assert r.assumptions()["gpu_bandwidth_from"].startswith("NVIDIA H20")


def test_names_from_the_real_corpus_match(shared_dir):
    text = (shared_dir / "corpus" / "nvidia-smi" / "09-table-2x-h100-80gb-hbm3-driver-570.txt").read_text()
    assert "H100 80GB HBM3" in text
    assert roofline.find_gpu("NVIDIA H100 80GB HBM3").key == "h100-sxm"


def test_unknown_gpu_is_a_clear_error():
    with pytest.raises(roofline.RooflineError, match="unknown GPU 'Voodoo2'"):
        roofline.find_gpu("Voodoo2")


def test_user_entries_add_and_override(gpudeck_home):
    path = roofline.user_catalogue_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('''
[[gpu]]
key = "my-card"
name = "My Card 9000"
aliases = ["my card 9000"]
memory_gb = 64
bandwidth_gbs = 1000
tflops = { bf16 = 100 }
interconnect = "PCIe 5"
allreduce_alpha_us = 3.0
allreduce_beta_gbs = 20

[[gpu]]
key = "l40s"
name = "L40S (measured)"
memory_gb = 48
bandwidth_gbs = 800
tflops = { bf16 = 362, fp8 = 733 }
interconnect = "PCIe 4"
allreduce_alpha_us = 4.0
allreduce_beta_gbs = 12
''')
    assert roofline.find_gpu("NVIDIA My Card 9000").bandwidth_gbs == 1000
    l40s = roofline.find_gpu("NVIDIA L40S")
    assert l40s.bandwidth_gbs == 800 and l40s.source == str(path)


def test_user_entry_missing_field_is_named(gpudeck_home):
    path = roofline.user_catalogue_path()
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text('[[gpu]]\nkey = "x"\nname = "X"\nmemory_gb = 1\n')
    with pytest.raises(roofline.RooflineError, match="missing field 'bandwidth_gbs'"):
        roofline.find_gpu("X")
