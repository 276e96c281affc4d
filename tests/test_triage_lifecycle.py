"""The log read as phases, and the lines a shell, systemd or a GPU runtime writes about a death.

A later phase overrides an earlier notice (ready after a slow-start warning
is not a hang), noise after an orderly stop is not a failure, a failed
request followed by more answers is a request error; what the shell says
about a signal names the class; OOM is one class on CUDA, ROCm and CPU.
The lines are the servers' and tools' own message formats."""
from __future__ import annotations

import pytest

from console.servers.triage import CRASH_CLASSES, classify
from console.servers.triage.rules import RuleSet, current_class

LLAMA_JSON_READY = [
    '{"tid":"140234","timestamp":1718000000,"level":"INFO","function":"main","line":3177,"msg":"HTTP server '
    'listening","hostname":"127.0.0.1","port":"8080","n_threads_http":"7"}',
    '{"tid":"140234","timestamp":1718000001,"level":"INFO","function":"update_slots","line":1625,'
    '"msg":"all slots are idle"}',
]
VLLM_START = [
    "INFO 11-20 10:00:01 [api_server.py:1043] vLLM API server version 0.11.0",
    "INFO 11-20 10:00:02 [utils.py:326] non-default args: {'model': 'Qwen/Qwen3-8B'}",
    "INFO 11-20 10:01:10 [default_loader.py:272] Loading weights took 12.40 seconds",
]
SHM_NOTICE = ("(EngineCore_DP0 pid=311) WARNING 11-20 10:02:47 [shm_broadcast.py:466] No available shared memory "
              "broadcast block found in 60 seconds. This typically happens when some processes are hanging or "
              "doing some time-consuming work (e.g. compilation).")
VLLM_READY = [
    "INFO 11-20 10:04:00 [api_server.py:1081] Starting vLLM API server 0 on http://0.0.0.0:8000",
    "INFO:     Started server process [4242]",
    "INFO:     Application startup complete.",
]
OK_200 = 'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK'
ASGI_FAILURE = [
    "ERROR:    Exception in ASGI application",
    "Traceback (most recent call last):",
    '  File "/usr/lib/python3/site-packages/uvicorn/protocols/http/httptools_impl.py", line 409, in run_asgi',
    "    result = await app(  # type: ignore[func-returns-value]",
    "ValueError: Input length (9001) exceeds model's maximum context length (8192).",
    'INFO:     10.0.0.7:51240 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
]
SIGTERM_NOISE = [
    "INFO:     Shutting down",
    "INFO:     Waiting for application shutdown.",
    "(APIServer pid=1) ERROR 11-20 11:00:00 [async_llm.py:480] AsyncLLM output_handler failed.",
    "(APIServer pid=1) ERROR 11-20 11:00:00 [async_llm.py:480] Traceback (most recent call last):",
    '(APIServer pid=1) ERROR 11-20 11:00:00 [async_llm.py:480]   File "/v/async_llm.py", line 439, in output_handler',
    "(APIServer pid=1) ERROR 11-20 11:00:00 [async_llm.py:480] vllm.v1.engine.exceptions.EngineDeadError: "
    "EngineCore encountered an issue. See stack trace (above) for the root cause.",
    "INFO:     Application shutdown complete.",
    "INFO:     Finished server process [4242]",
]


def verdict(lines):
    result = classify(lines)
    return result.cls, result.state


# ------------------------------------------------------------ what the shell and systemd say
@pytest.mark.parametrize("line, cls", [
    ("Segmentation fault (core dumped)", "segfault"),
    ("zsh: segmentation fault  ./build/bin/llama-server -m model.gguf", "segfault"),
    ("./run.sh: line 3: 81234 Segmentation fault      (core dumped) ./llama-server -m m.gguf", "segfault"),
    ("Aborted", "abort"),
    ("Aborted (core dumped)", "abort"),
    ("zsh: abort      ./llama-server -m model.gguf", "abort"),
    ("Killed", "process-killed"),
    ("bash: line 1: 4242 Killed                  python -m vllm.entrypoints.openai.api_server", "process-killed"),
    ("zsh: killed     ./llama-server -m model.gguf", "process-killed"),
    ("Bus error (core dumped)", "bus-error"),
    ("Illegal instruction (core dumped)", "illegal-instruction"),
    ("zsh: illegal hardware instruction  ./llama-server", "illegal-instruction"),
    ("Floating point exception (core dumped)", "fpe"),
    ("Nov 20 10:05:00 gpu01 systemd[1]: llama.service: Main process exited, code=dumped, status=11/SEGV",
     "segfault"),
    ("Nov 20 10:05:00 gpu01 systemd[1]: llama.service: Main process exited, code=dumped, status=6/ABRT", "abort"),
    ("Nov 20 10:05:00 gpu01 systemd[1]: vllm.service: Main process exited, code=killed, status=9/KILL",
     "process-killed"),
])
def test_the_shell_or_systemd_naming_a_signal_names_the_class(line, cls):
    result = classify(LLAMA_JSON_READY + [line])
    assert (result.cls, result.state) == (cls, "crashed")
    assert result.line == len(LLAMA_JSON_READY) + 1


def test_an_aborted_request_is_not_an_abort():
    lines = VLLM_START + VLLM_READY + ["INFO 12-05 09:57:05 async_llm_engine.py:180] Aborted request chat-4656e70.",
                                       OK_200]
    assert verdict(lines) == ("healthy", "serving")


def test_a_root_cause_before_the_abort_wins():
    lines = LLAMA_JSON_READY + ["CUDA error: an illegal memory access was encountered",
                                "GGML_ASSERT: ggml-cuda.cu:70: !\"CUDA error\"", "Aborted (core dumped)"]
    assert verdict(lines) == ("cuda-illegal-address", "crashed")


# ------------------------------------------------------------ later phases override earlier notices
def test_a_slow_start_notice_before_ready_is_not_a_hang():
    lines = VLLM_START + [SHM_NOTICE] + VLLM_READY + [OK_200]
    cls, state = verdict(lines)
    assert (cls, state) == ("healthy", "serving")
    assert "slow start" in classify(lines).summary


def test_a_kill_after_a_slow_start_is_not_blamed_on_the_old_notice():
    lines = VLLM_START + [SHM_NOTICE] + VLLM_READY + [OK_200, "Killed"]
    result = classify(lines)
    assert (result.cls, result.line) == ("process-killed", len(lines))


def test_the_same_notice_after_ready_with_nothing_after_is_a_hang():
    assert verdict(VLLM_START + VLLM_READY + [OK_200, SHM_NOTICE]) == ("hang", "hung")


def test_a_notice_after_ready_that_the_server_outlives_is_not_a_hang():
    lines = VLLM_START + VLLM_READY + [OK_200, SHM_NOTICE, OK_200]
    assert verdict(lines)[0] != "hang"


def test_shutdown_noise_after_an_orderly_stop_is_not_a_failure():
    result = classify(VLLM_START + VLLM_READY + [OK_200] + SIGTERM_NOISE)
    assert (result.cls, result.state) == ("healthy", "stopped")
    assert "noise" in result.summary


def test_an_engine_death_before_the_shutdown_is_still_a_crash():
    died = ["(APIServer pid=1) ERROR 11-20 10:59:59 [core_client.py:564] Engine core proc EngineCore_DP0 died "
            "unexpectedly, shutting down client."]
    result = classify(VLLM_START + VLLM_READY + [OK_200] + died + SIGTERM_NOISE)
    assert (result.cls, result.state) == ("engine-dead", "crashed")


def test_a_request_error_followed_by_more_answers_is_a_request_error():
    lines = VLLM_START + VLLM_READY + [OK_200] + ASGI_FAILURE + [OK_200, OK_200]
    result = classify(lines)
    assert (result.cls, result.state) == ("request-error", "serving")
    assert result.cls not in CRASH_CLASSES
    assert result.line == len(VLLM_START + VLLM_READY) + 2


def test_a_request_error_that_nothing_answers_after_stays_a_failure():
    lines = VLLM_START + VLLM_READY + [OK_200] + ASGI_FAILURE
    assert verdict(lines)[0] in CRASH_CLASSES


def test_a_request_error_in_a_huge_log_is_still_outlived():
    lines = VLLM_START + VLLM_READY + [OK_200] * 30000 + ASGI_FAILURE + [OK_200] * 30000
    assert verdict(lines) == ("request-error", "serving")


# ------------------------------------------------------------ GPU runtimes beside CUDA
@pytest.mark.parametrize("line, cls", [
    ("ROCm error: out of memory", "oom"),
    ("  ROCm error: out of memory\n  current device: 0, in function alloc at ggml-cuda.cu:380", "oom"),
    ("CUDA error 2 at /llama.cpp/ggml/src/ggml-cuda/ggml-cuda.cu:410: out of memory", "oom"),
    ("ggml_backend_cuda_buffer_type_alloc_buffer: allocating 8192.00 MiB on device 0: cudaMalloc failed: "
     "out of memory", "oom"),
    ("hipMalloc failed: out of memory", "oom"),
    ("HIP error: invalid device function", "model-load"),
    ("ROCm error: invalid device function\n  current device: 0, in function ggml_cuda_op_mul_mat", "model-load"),
    ("ValueError: No available memory for the cache blocks. Try increasing `VLLM_CPU_KVCACHE_SPACE` when "
     "initializing the engine.", "oom"),
])
def test_runtime_errors_of_every_vendor_get_their_class(line, cls):
    assert verdict(LLAMA_JSON_READY[:1] + line.split("\n") + ["Aborted (core dumped)"])[0] == cls


def test_a_harmless_bitsandbytes_warning_does_not_make_a_kill_a_model_load():
    lines = ["/usr/lib/python3/site-packages/bitsandbytes/libbitsandbytes_cpu.so: undefined symbol: "
             "cadam32bit_grad_fp32"] + VLLM_START + ["Killed"]
    assert verdict(lines) == ("process-killed", "crashed")


def test_the_renamed_oom_class_is_still_read_from_old_names(tmp_path):
    assert current_class("cuda-oom") == "oom"
    rules = tmp_path / "rules.toml"
    rules.write_text('[classes]\ncuda-oom = 90\n\n[[rule]]\nclass = "cuda-oom"\npattern = "CUDA out of memory"\n')
    loaded = RuleSet.load(rules)
    assert loaded.rules[0].name == "oom" and loaded.priority["oom"] == 90


def test_old_crash_and_launch_records_read_under_todays_names():
    from console.store.launches import LaunchRecord
    from console.store.crashes import CrashRecord

    assert CrashRecord.from_doc({"class": "cuda-oom"}, "a").cls == "oom"
    assert CrashRecord.from_doc({"class": "healthy"}, "b").cls == "unknown"
    old = LaunchRecord(id="x", config="c", script=None, log=None, exit_file=None, crash_class="healthy")
    assert old.crash_class == "unknown"


def test_a_kill_the_supervisor_reports_as_its_own_stop_is_a_stop():
    unloaded = ["2023/11/27 22:28:29 llama.go:435: signal: killed",
                "2023/11/27 22:28:29 llama.go:509: llama runner stopped successfully"]
    assert verdict(unloaded) == ("unknown", "stopped")
    assert verdict(unloaded[:1]) == ("process-killed", "crashed")


def test_vllm_shutdown_lines_after_serving_are_a_clean_stop_despite_force_kill_noise():
    lines = VLLM_START + VLLM_READY + [OK_200,
        "(APIServer pid=9) INFO 07-23 16:29:03 [launcher.py:100] [shutdown] API server: shutdown triggered",
        "(APIServer pid=9) WARNING 07-23 16:29:03 [utils.py:626] [shutdown] Process manager: force killing "
        "remaining processes count=1",
        "(EngineCore pid=10) INFO 07-23 16:29:03 [core.py:1313] [shutdown] EngineCore: trigger received signal=SIGTERM"]
    assert verdict(lines) == ("healthy", "stopped")


def test_the_stop_signal_raised_through_the_stack_after_ctrl_c_is_the_stop():
    lines = ["KeyboardInterrupt",
             "Traceback (most recent call last):",
             '  File "/usr/lib/python3/torch/distributed/elastic/multiprocessing/api.py", line 62, in _terminate',
             "    raise SignalException(f\"Process {os.getpid()} got signal: {sigval}\", sigval=sigval)",
             "torch.distributed.elastic.multiprocessing.api.SignalException: Process 1313 got signal: 2"]
    assert verdict(lines) == ("unknown", "stopped")
    # a real failure raised after the stop is still one
    assert verdict(lines[:-1] + ["RuntimeError: CUDA error: an illegal memory access was encountered"])[0] \
        == "cuda-illegal-address"
