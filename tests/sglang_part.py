"""A real sglang server (0.5.23, its CPU engine) serving SmolLM2-135M, for the tests.

tests/fetch_sglang.sh prepares it on top of the vLLM test environment (the
CPU torch and the converted model come from there) and says why each shim is
needed. Where it could not, it leaves one line in `unavailable` and the sglang
tests skip with it; assets never prepared are a failure saying what to run.
"""
from __future__ import annotations

import os
from pathlib import Path

import pytest

from tests.vllm_part import CACHE as VLLM_CACHE
from tests.vllm_part import MODEL_NAME, exec_script, private_env
from tests.tiers import reaches

VERSION = "0.5.23"
CACHE = Path(os.environ.get("GPUDECK_SGLANG_CACHE")
             or Path.home() / ".cache" / "gpudeck-test-assets" / f"sglang-cpu-{VERSION}")
SETTINGS = {"SGLANG_USE_CPU_ENGINE": "1", "HF_HUB_OFFLINE": "1", "SGLANG_DISABLE_USAGE_STATS": "1"}


@reaches("sglang")
def sglang_assets() -> tuple[Path, Path]:
    """(the venv's python, the served model's folder), or the one skip line."""
    if (CACHE / "ready").is_file() and (VLLM_CACHE / "ready").is_file():
        return CACHE / "venv" / "bin" / "python", VLLM_CACHE / "SmolLM2-135M-Instruct-bf16"
    unavailable = CACHE / "unavailable"
    if unavailable.is_file():
        pytest.skip(unavailable.read_text(errors="replace").strip()[:300] or "sglang cannot run here")
    pytest.fail(f"sglang test assets not prepared in {CACHE}: run `bash tests/fetch_sglang.sh` "
                "(after tests/fetch_vllm.sh)", pytrace=False)


def launch_script(base: Path, port: int, *extra: str) -> str:
    """`exec python -m sglang.launch_server ...` on the CPU, torch's attention, a small KV pool."""
    python, model = sglang_assets()
    settings = {**private_env(base), **SETTINGS, "PYTHONPATH": str(CACHE / "shims")}
    argv = [str(python), "-m", "sglang.launch_server", "--model-path", str(model), "--host", "127.0.0.1",
            "--port", str(port), "--served-model-name", MODEL_NAME, "--device", "cpu",
            "--attention-backend", "torch_native", "--context-length", "1024",
            "--mem-fraction-static", "0.05", "--enable-metrics", *extra]
    return exec_script(settings, argv)
