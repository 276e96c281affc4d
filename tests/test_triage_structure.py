"""Triage from a log's structure: final exceptions and fatal error lines read with a vocabulary of
meanings, lists of causes that name none, the first root cause, and the strength of a verdict.

Every log here is a real excerpt of the project's corpus (tests/triage_corpus/, sources in
INDEX.tsv), never one of the sealed split; the one splice says so.
"""
from __future__ import annotations

from pathlib import Path

import pytest

from console.servers.triage import classify_file, classify_text
from console.servers.triage.strength import THRESHOLD
from tests.triage_corpus.sealed import is_sealed

CORPUS = Path(__file__).parent / "triage_corpus"
_URLS = {line.split("\t")[0]: line.split("\t")[5]
         for line in (CORPUS / "INDEX.tsv").read_text().splitlines()[1:]}


def corpus(name: str) -> Path:
    assert not is_sealed(_URLS[name]), f"{name} is in the sealed split: tests must not read it"
    return CORPUS / "logs" / name


def test_a_list_of_possible_causes_names_none_of_them():
    """Ray's 'The actor is dead ... Some common causes include: (1) ... OOM killer ... (3) ... SIGSEGV'
    was read as a segfault; the list names no cause, so the answer is unknown, pointing at it."""
    verdict = classify_file(corpus("verl-4921-ray-actor-died-common-causes-list.log"))
    assert verdict.cls == "unknown"
    assert 1 <= len(verdict.suspicious) <= 3
    whys = " / ".join(entry["why"] for entry in verdict.suspicious)
    assert "died" in whys or "possible causes" in whys


@pytest.mark.parametrize("name", ["vllm-ascend-19-npu-out-of-memory-22mib.log",
                                  "vllm-ascend-1987-glm-two-cards-npu-oom.log"])
def test_an_npu_out_of_memory_exception_is_oom(name):
    """`RuntimeError: NPU out of memory. Tried to allocate ...`: the exception's message means OOM,
    whatever accelerator printed it (it was a plain python-exception)."""
    verdict = classify_file(corpus(name))
    assert verdict.cls == "oom"
    assert "structure" in verdict.evidence_kinds


def test_a_fatal_error_line_of_a_rust_runtime_is_read_by_its_meaning():
    """Dynamo's `Error: Model name '/workspace/qwenmodel' cannot start with a slash` (an anyhow error
    returned from main) is a model-load failure at start, not an unknown."""
    verdict = classify_file(corpus("dynamo-847-frontend-served-model-name-slash.log"))
    assert verdict.cls == "model-load"
    assert verdict.decided_by == "exception-meaning"


def test_a_ray_placement_group_that_waits_for_gpus_is_a_hang():
    verdict = classify_file(corpus("vllm-14111-rocm-ray-placement-group-waiting.log"))
    assert (verdict.cls, verdict.state) == ("hang", "hung")


def test_the_first_root_cause_not_the_last_consequence():
    """A splice of two real excerpts of one project (TensorRT-LLM: the assertion of
    Tlntin/Qwen-TensorRT-LLM#123, then the MPI segfault report of NVIDIA/TensorRT-LLM#997): an
    exception, then the process dies by SIGSEGV. The exception is the root cause."""
    text = "\n".join([
        '  File "/app/tensorrt_llm/examples/qwen2/run.py", line 386, in main',
        "    runner = runner_cls.from_dir(**runner_kwargs)",
        '  File "/usr/local/lib/python3.10/dist-packages/tensorrt_llm/runtime/model_runner_cpp.py", line 139, '
        "in from_dir",
        "    world_config = WorldConfig.mpi(tensor_parallelism=tp_size,",
        "RuntimeError: [TensorRT-LLM][ERROR] Assertion failed: mpiSize == tp * pp (/home/jenkins/agent/workspace/"
        "LLM/release-0.8/L0_PostMerge/tensorrt_llm/cpp/tensorrt_llm/runtime/worldConfig.cpp:90)",
        "    [ic5:133017] *** Process received signal ***",
        "    [ic5:133017] Signal: Segmentation fault (11)",
        "    [ic5:133017] Signal code: Address not mapped (1)",
        "    [ic5:133017] Failing at address: 0x440000e9",
    ]) + "\n"
    verdict = classify_text(text)
    assert verdict.cls == "python-exception", verdict.summary
    assert verdict.line == 5
    assert "Segmentation fault" in verdict.summary or "SIGSEGV" in verdict.summary


def test_every_verdict_carries_its_evidence_kinds_and_a_confidence():
    oom = classify_file(corpus("vllm-36861-pp-no-available-memory-cache-blocks.log")).to_json()
    assert oom["class"] == "oom" and oom["confidence"] >= THRESHOLD
    assert set(oom["evidence_kinds"]) <= {"structure", "phrase"} and oom["evidence_kinds"]
    assert oom["decided_by"] and oom["suspicious"] == []


def test_a_weak_verdict_is_unknown_with_the_lines_to_look_at():
    """A death notice (the actor died; the cause is in another process's log) is too weak to name a
    class: unknown, with at most three lines and why each is suspicious."""
    doc = classify_file(corpus("verl-4921-ray-actor-died-common-causes-list.log")).to_json()
    assert doc["class"] == "unknown" and doc["confidence"] < THRESHOLD
    assert all(set(entry) == {"line", "text", "why"} and entry["why"] for entry in doc["suspicious"])
    assert all(isinstance(entry["line"], int) for entry in doc["suspicious"])
