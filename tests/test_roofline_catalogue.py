"""The GPU catalogue is data: packaged entries, user additions, nvidia-smi names."""
from __future__ import annotations

import pytest

from console import roofline

REQUIRED = ["H100 SXM", "H100 PCIe", "H200", "B200", "GB200", "A100", "L40S", "RTX PRO 6000 Blackwell",
            "RTX 5090", "RTX 4090", "MI300X"]


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
])
def test_nvidia_smi_names_match(smi_name, key):
    assert roofline.find_gpu(smi_name).key == key


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
