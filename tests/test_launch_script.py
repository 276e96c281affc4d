"""Launch scripts -> the normalised flags table, diffs, broken promises,
and the script checked against the effective args a server logs."""
from __future__ import annotations

from pathlib import Path

import pytest

from console.servers.launch import (
    LaunchConfigError, changed, compare, effective_from_log, logical_lines, parse_script, show,
)

SCRIPTS = Path(__file__).parent / "fixtures" / "scripts"


def load(name: str):
    path = SCRIPTS / name
    return parse_script(path.read_text(), path.name)


def test_name_with_spaces_and_parentheses_parses():
    config = load("launch EP8 memsafe (dsv3).sh")
    assert config.server == "sglang"
    assert config.flags["model"] == "/models/DeepSeek-V3"  # export MODEL=..., "$MODEL"
    assert config.flags["mem_fraction"] == 0.80  # ${MEM}
    assert config.flags["port"] == 30000  # $PORT
    assert config.flags["max_running"] == 256
    assert config.flags["kv_dtype"] == "fp8_e5m2"
    assert config.flags["cuda_graph"] == "max bs 256"
    assert (config.flags["tp"], config.flags["ep"]) == (8, 1)
    assert config.sources["ep"] == "default"


def test_ep8_name_with_tp8_flags_is_called_out():
    config = load("launch EP8 memsafe (dsv3).sh")
    assert "the name says ep8; the flags say ep 1: this is TP8" in config.warnings


def test_enable_ep_moe_switch_sets_ep_to_tp():
    config = load("launch EP8 real.sh")
    assert (config.flags["tp"], config.flags["ep"]) == (8, 8)
    assert config.sources["ep"] == "implied"
    assert config.flags["moe_backend"] == "deepep"
    assert config.flags["cuda_graph"] == "off"
    assert config.env["CUDA_VISIBLE_DEVICES"] == "0,1,2,3,4,5,6,7"
    assert config.warnings == []


def test_vllm_serve_positional_model_equals_flags_and_env():
    config = load("vllm-tp4-dp2.sh")
    assert config.server == "vllm"
    assert config.flags["model"] == "Qwen/Qwen3-235B-A22B-FP8"
    assert (config.flags["tp"], config.flags["dp"], config.flags["ep"]) == (4, 2, 8)
    assert config.flags["mem_fraction"] == 0.92  # --flag=value form
    assert config.flags["max_running"] == 128
    assert config.flags["context_length"] == 40960
    assert config.flags["attention_backend"] == "FLASHINFER"
    assert config.sources["attention_backend"] == "env"
    assert config.flags["cuda_graph"] == "off"
    assert config.flags["port"] == 8000  # ${PORT:-8000}


@pytest.mark.parametrize("sizes, ep, unresolved", [
    ("--tensor-parallel-size $TP --data-parallel-size $DP", "$TP*$DP", ["TP", "DP"]),  # was a TypeError
    ("--tensor-parallel-size 4 --data-parallel-size $DP", "4*$DP", ["DP"]),  # was "$DP$DP$DP$DP"
    ("--tensor-parallel-size $TP", "$TP", ["TP"]),
    ("--tensor-parallel-size 4 --data-parallel-size 99999999999999999999999", "unreadable", None),
])
def test_vllm_expert_parallel_implied_from_sizes_not_known_yet(sizes, ep, unresolved):
    config = parse_script(f"vllm serve m {sizes} --enable-expert-parallel\n", "run.sh")
    assert (config.flags["ep"], config.sources["ep"]) == (ep, "implied")
    assert config.unresolved.get("ep") == unresolved


def test_vllm_api_server_module_and_short_flags():
    config = load("vllm-api-server-module.sh")
    assert config.server == "vllm"
    assert config.flags["tp"] == 2 and config.flags["quantization"] == "awq"
    assert (config.flags["host"], config.flags["port"]) == ("127.0.0.1", 8001)


def test_llama_server_through_a_variable_with_exec():
    config = load("llama-smollm.sh")
    assert config.server == "llama.cpp"
    assert config.flags["model"].endswith("SmolLM2-135M-Instruct-Q8_0.gguf")
    assert (config.flags["context_length"], config.flags["max_running"]) == (4096, 4)
    assert config.flags["tp"] is None and show(config.flags["tp"]) == "N/A"


def test_trtllm_serve():
    config = load("trtllm-serve.sh")
    assert config.server == "trtllm"
    assert (config.flags["tp"], config.flags["ep"], config.flags["max_running"]) == (8, 8, 384)
    assert config.flags["mem_fraction"] == 0.85


def test_script_without_a_server_is_an_error():
    with pytest.raises(LaunchConfigError):
        load("not-a-server.sh")


def test_sglang_serve_and_comment_inside_continuation():
    text = "sglang serve \\\n  # the model\n  --model-path m --tp 2 \\\n  --ep 2  # inline\n"
    config = parse_script(text, "tp2ep2.sh")
    assert (config.flags["model"], config.flags["tp"], config.flags["ep"]) == ("m", 2, 2)
    assert config.warnings == []


def test_comment_promise_checked_too():
    config = parse_script("# runs with dp4\nvllm serve m --data-parallel-size 2\n", "x.sh")
    assert config.warnings == ["a comment says dp4; the flags say dp 2"]


def test_logical_lines_join_continuations():
    commands, comments = logical_lines("#!/bin/sh\n# hi\nA=1\nfoo \\\n  --bar 2\n")
    assert [c.split() for c in commands] == [["A=1"], ["foo", "--bar", "2"]]
    assert comments == ["hi"]


def test_diff_lists_changed_rows_only():
    rows = changed(load("launch EP8 memsafe (dsv3).sh"), load("launch EP8 real.sh"))
    keys = {row.key for row in rows}
    assert {"ep", "mem_fraction", "max_running", "moe_backend", "cuda_graph"} <= keys
    assert "tp" not in keys and "model" not in keys


def test_effective_args_from_sglang_log(shared_dir):
    log = shared_dir / "corpus/logs/healthy-startup/01-sglang-server-args-to-fired-up-ci-notebook.log"
    found = effective_from_log(log.read_text().splitlines())
    assert found.server == "sglang"
    assert found.flags["model"] == "qwen/qwen2.5-0.5b-instruct"
    assert (found.flags["mem_fraction"], found.flags["max_running"], found.flags["port"]) == (0.874, 200, 37945)
    assert found.flags["host"] == "0.0.0.0"
    assert found.flags["tp"] == found.raw["tp_size"]


def test_effective_args_from_vllm_log(shared_dir):
    log = shared_dir / "corpus/logs/healthy-startup/03-vllm-0.10-api-server-version-and-non-default-args.log"
    found = effective_from_log(log.read_text().splitlines())
    assert found.server == "vllm"
    assert found.flags["tp"] == 2 and found.flags["ep"] == 1
    assert found.flags["model"] == "/data/datasets/models-hf/Qwen2.5-0.5B/"


def test_effective_args_from_real_sglang_dict_line():
    """sglang 0.5.2x states its resolved args as `server_args={...}`, not `ServerArgs(...)`."""
    log = Path(__file__).parent / "fixtures/logs/sglang-cpu-0.5.23/sigterm-group-ready.log"
    found = effective_from_log(log.read_text().splitlines())
    assert found is not None and found.server == "sglang" and found.line == 12
    assert found.flags["port"] == 31911 and found.flags["mem_fraction"] == 0.05
    assert found.flags["model"].endswith("SmolLM2-135M-Instruct-bf16")
    assert found.flags["tp"] == 1 and found.flags["cuda_graph"] == "off"  # its resolved decode graphs


def test_script_against_effective_marks_mismatches():
    config = load("launch EP8 memsafe (dsv3).sh")
    log_line = ("[2025-06-02 13:58:01] server_args=ServerArgs(model_path='/models/DeepSeek-V3', tp_size=8, "
                "ep_size=1, mem_fraction_static=0.78, max_running_requests=256, port=30000, "
                "kv_cache_dtype='fp8_e5m2', disable_cuda_graph=False, cuda_graph_max_bs=256, host='0.0.0.0')")
    effective = effective_from_log([log_line]).flags
    checks = {check.key: check for check in compare(config, effective)}
    assert checks["mem_fraction"].mismatch  # 0.80 in the script, 0.78 in effect
    assert not checks["tp"].mismatch and not checks["port"].mismatch
    assert not checks["cuda_graph"].mismatch
    assert not checks["quantization"].mismatch  # unknown on both sides is not a mismatch
