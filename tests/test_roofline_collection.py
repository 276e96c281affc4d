"""The collection of real configs: no number more than 2% from its reference without a reason said.

Every config of tests/fixtures/model-configs and the shared model configs,
with a reference total parameter count: published by the makers (a string
read with the precision it was published with, at least 2% slack), or exact
from the checkpoint's own safetensors index (`metadata.total_parameters`, or
`total_size` over the dtype bytes), recorded in SOURCES.tsv. Each config is
either refused by name, within its reference, or carries a warning or
assumption that names why it is not (a vision tower left out, MTP layers not
counted).
"""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from console import roofline

FIXTURES = Path(__file__).parent / "fixtures" / "model-configs"
SHARED = Path(__file__).parent / "fixtures" / "shared" / "model-configs"

# (file stem, folder, reference in billions, how the reference is known, year released)
# "index": exact from the checkpoint's safetensors index (SOURCES.tsv); "published": the makers' figure.
COLLECTION = [
    ("CodeLlama-34b", FIXTURES, "33.7", "published", 2023),
    ("DeepSeek-V2-Lite", FIXTURES, "15.7", "published", 2024),
    ("Llama-2-7b", FIXTURES, "6.74", "published", 2023),
    ("Llama-2-13b", FIXTURES, "13.0", "published", 2023),
    ("Llama-2-70b", FIXTURES, "69.0", "published", 2023),
    ("Llama-3.2-1B", FIXTURES, "1.24", "published", 2024),
    ("Llama-3.2-3B", FIXTURES, "3.21", "published", 2024),
    ("Llama-4-Scout-17B-16E", FIXTURES, "109", "published", 2025),
    ("Llama-4-Maverick-17B-128E", FIXTURES, "400", "published", 2025),
    ("Mistral-7B-v0.3", FIXTURES, "7.25", "published", 2024),
    ("NVIDIA-Nemotron-Nano-9B-v2", FIXTURES, "8.89", "published", 2025),
    ("Nemotron-H-8B-Base-8K", FIXTURES, "8", "published", 2025),
    ("OLMo-2-1124-7B", FIXTURES, "7.30", "published", 2024),
    ("OLMo-2-1124-13B", FIXTURES, "13.7", "published", 2024),
    ("Phi-4-mini-instruct", FIXTURES, "3.84", "published", 2025),
    ("Qwen1.5-MoE-A2.7B", FIXTURES, "14.3", "published", 2024),
    ("Qwen2-0.5B", FIXTURES, "0.49", "published", 2024),
    ("Qwen2-1.5B", FIXTURES, "1.54", "published", 2024),
    ("Qwen2-7B", FIXTURES, "7.62", "published", 2024),
    ("Qwen2.5-3B", FIXTURES, "3.09", "published", 2024),
    ("Qwen2.5-7B", FIXTURES, "7.61", "published", 2024),
    ("Qwen2.5-14B", FIXTURES, "14.7", "published", 2024),
    ("Qwen2.5-32B", FIXTURES, "32.5", "published", 2024),
    ("Qwen3-0.6B", FIXTURES, "0.6", "published", 2025),
    ("Qwen3-1.7B", FIXTURES, "1.7", "published", 2025),
    ("Qwen3-4B", FIXTURES, "4.0", "published", 2025),
    ("Qwen3-8B", FIXTURES, "8.2", "published", 2025),
    ("Qwen3-14B", FIXTURES, "14.8", "published", 2025),
    ("Qwen3-32B", FIXTURES, "32.8", "published", 2025),
    ("Qwen3-Next-80B-A3B", FIXTURES, "80", "published", 2025),
    ("Qwen3.5-27B", FIXTURES, "27", "published", 2026),
    ("SmolLM2-135M", FIXTURES, "0.135", "published", 2024),
    ("TinyLlama-1.1B-Chat-v1.0", FIXTURES, "1.1", "published", 2024),
    ("gemma-2b", FIXTURES, "2.51", "published", 2024),
    ("gemma-2-2b", FIXTURES, "2.61", "published", 2024),
    ("gemma-2-9b", FIXTURES, "9.24", "published", 2024),
    ("gemma-2-27b", FIXTURES, "27.2", "published", 2024),
    ("gemma-3-1b-it", FIXTURES, "1.0", "published", 2025),
    ("gemma-3-27b", FIXTURES, "27", "published", 2025),
    ("Llama-3_3-Nemotron-Super-49B-v1", FIXTURES, "49.9", "published", 2025),
    ("gemma-4-toy-moe", FIXTURES, None, "a toy of the layout, refused", 2026),
    # added with this collection (SOURCES.tsv gives the file, the commit and the index metadata)
    ("WizardLM-2-8x22B", FIXTURES, "140.6206", "index", 2024),           # total_size 281241268224 / 2
    ("Qwen3.5-18B-REAP-A3B-Coding", FIXTURES, "18.5440", "index", 2026),  # total_size 37087995136 / 2 (float16)
    ("Qwen3.5-25B-REAP-A3B-Coding", FIXTURES, "25.0914", "index", 2026),  # total_parameters 25091371648
    ("medgemma-27b-it", FIXTURES, "28.8420", "index", 2025),              # total_parameters, vision tower included
    ("MiMo-7B", FIXTURES, "7.8334", "index", 2025),                       # total_size / 2, one MTP layer included
    ("SmolLM3-3B", FIXTURES, "3.0751", "index", 2025),                    # total_parameters 3075098624
    ("cogito-v1-preview-qwen-14B", FIXTURES, "14.7659", "index", 2025),   # total_size 29531895808 / 2
    ("LFM2-1.2B", FIXTURES, "1.17", "published", 2025),
    ("Falcon-H1-0.5B", FIXTURES, "0.52", "published", 2025),
    ("GLM-4.5", FIXTURES, "355", "published", 2025),
    ("GLM-4.5-Air", FIXTURES, "106", "published", 2025),
    ("OLMoE-1B-7B-0924", FIXTURES, "6.92", "published", 2024),
    ("Qwen3.5-397B-A17B", FIXTURES, "397", "published", 2026),
    # the shared configs
    ("DeepSeek-V3", SHARED, "671", "published", 2024),
    ("GLM-5", SHARED, "744", "published", 2026),
    ("Kimi-K2-Instruct", SHARED, "1040", "published", 2025),
    ("Llama-3.1-8B", SHARED, "8.03", "published", 2024),
    ("Llama-3.1-70B", SHARED, "70.6", "published", 2024),
    ("Llama-3.1-405B", SHARED, "406", "published", 2024),
    ("Mixtral-8x7B-v0.1", SHARED, "46.7", "published", 2023),
    ("Qwen3-235B-A22B", SHARED, "235", "published", 2025),
    ("Qwen3-30B-A3B", SHARED, "30.5", "published", 2025),
    ("gpt-oss-120b", SHARED, "116.8", "published", 2025),
    ("gpt-oss-20b", SHARED, "20.9", "published", 2025),
]
# Why a number may stand further than 2% from its reference: each must be said by the roofline itself.
REASONS = ("multi-token-prediction", "not counted", "vision_config")


def _slack(published: str, kind: str) -> float:
    if kind == "index":
        return 0.02
    decimals = len(published.split(".")[1]) if "." in published else 0
    return max(0.02, 0.5 * 10 ** -decimals / float(published))


def verdict(stem: str, folder: Path, reference: str | None, kind: str) -> tuple[str, float | None, str]:
    """("ok" | "warned" | "refused", gpudeck's total in billions, the reason or the refusal)."""
    try:
        facts = roofline.load_model(folder / f"{stem}.json")
    except roofline.RooflineError as exc:
        return "refused", None, str(exc)
    total = facts.total_params / 1e9
    if reference is None or abs(total / float(reference) - 1) <= _slack(reference, kind):
        return "ok", total, ""
    said = [s for s in facts.warnings + facts.assumptions if any(r in s for r in REASONS)]
    return ("warned" if said else "wrong"), total, " | ".join(said)


def test_the_collection_is_large_recent_and_complete():
    assert len(COLLECTION) >= 60
    assert sum(1 for row in COLLECTION if row[4] >= 2025) >= 20
    listed = {row[0] for row in COLLECTION if row[1] == FIXTURES}
    assert listed == {p.stem for p in FIXTURES.glob("*.json")}
    sources = (FIXTURES / "SOURCES.tsv").read_text()
    for row in COLLECTION:
        if row[1] == FIXTURES:
            assert f"{row[0]}.json\t" in sources


@pytest.mark.parametrize("stem,folder,reference,kind,year", COLLECTION, ids=[r[0] for r in COLLECTION])
def test_no_silent_number(stem, folder, reference, kind, year):
    got, total, why = verdict(stem, folder, reference, kind)
    assert got != "wrong", f"{stem}: {total:.3f}B against {reference}B with no reason said"
    if got == "refused":
        assert re.search(r"'[^']+'", why) or "Mamba/SSM" in why, why      # names the key or the feature
        assert "wrong kind" not in why and "Traceback" not in why


def test_the_verdicts_of_the_configs_that_need_one():
    """The configs outside 2% say why; the hybrids and NAS layouts are refused by name."""
    expected = {"medgemma-27b-it": "warned", "MiMo-7B": "warned", "LFM2-1.2B": "refused",
                "Falcon-H1-0.5B": "refused", "Llama-3_3-Nemotron-Super-49B-v1": "refused",
                "gemma-4-toy-moe": "refused"}
    rows = {r[0]: r for r in COLLECTION}
    for stem, want in expected.items():
        _, folder, reference, kind, _ = rows[stem]
        assert verdict(stem, folder, reference, kind)[0] == want, stem
