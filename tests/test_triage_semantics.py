"""What a verdict means: a lifecycle state beside the class, `healthy` only
when earned, the last run of the server decides, and the root cause is
chosen by kind and time. The log lines are the servers' own message
formats (vLLM, sglang, uvicorn, the kernel, Kubernetes)."""
from __future__ import annotations

import codecs
import json
import tracemalloc

import pytest

from console.servers.triage import classify, classify_file
from tests.cli import gpudeck

VLLM_START = [
    "INFO 05-11 10:00:01 [api_server.py:1043] vLLM API server version 0.9.1",
    "INFO 05-11 10:00:01 [cli_args.py:325] non-default args: {'model': 'meta-llama/Llama-3.1-8B-Instruct'}",
    "INFO 05-11 10:01:10 [default_loader.py:272] Loading weights took 12.40 seconds",
    "INFO 05-11 10:01:30 [kv_cache_utils.py:716] GPU KV cache size: 412,000 tokens",
]
VLLM_CAPTURE = "Capturing CUDA graphs (mixed prefill-decode, PIECEWISE):  41%|####      | 27/67 [00:03<00:04,  9.1it/s]"
VLLM_READY = [
    "INFO 05-11 10:02:00 [api_server.py:1081] Starting vLLM API server 0 on http://0.0.0.0:8000",
    "INFO 05-11 10:02:00 [launcher.py:29] Available routes are:",
    "INFO:     Started server process [4242]",
    "INFO:     Waiting for application startup.",
    "INFO:     Application startup complete.",
]
VLLM_SERVING = [
    'INFO:     10.0.0.7:51234 - "POST /v1/chat/completions HTTP/1.1" 200 OK',
    "INFO 05-11 10:04:00 [loggers.py:118] Engine 000: Avg prompt throughput: 1201.3 tokens/s, "
    "Avg generation throughput: 512.0 tokens/s, Running: 32 reqs, Waiting: 0 reqs",
]
SGLANG_READY = [
    "[2025-06-04 11:00:00] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-R1', tp_size=8, port=30000)",
    "[2025-06-04 11:00:40] The server is fired up and ready to roll!",
    "[2025-06-04 11:01:00 TP0] Decode batch. #running-req: 512, #token: 90210, token usage: 0.40, "
    "cuda graph: False, gen throughput (token/s): 5021.8, #queue-req: 12",
]


def verdict(lines):
    result = classify(lines)
    return result.cls, result.state


# ------------------------------------------------------------ healthy must be earned
def test_log_stopped_mid_load_is_loading_not_healthy():
    assert verdict(VLLM_START) == ("unknown", "loading")
    assert verdict(VLLM_START + [VLLM_CAPTURE]) == ("unknown", "loading")


def test_nothing_recognisable_is_unknown():
    assert verdict(["hello", "world"]) == ("unknown", "unknown")


def test_ready_then_serving_is_healthy():
    assert verdict(VLLM_START + VLLM_READY) == ("healthy", "ready")
    assert verdict(VLLM_START + VLLM_READY + VLLM_SERVING) == ("healthy", "serving")


def test_bind_failure_after_startup_complete_is_a_crash():
    lines = VLLM_START + VLLM_READY + [
        "ERROR:    [Errno 98] error while attempting to bind on address ('0.0.0.0', 8000): address already in use",
        "INFO:     Waiting for application shutdown.",
        "INFO:     Application shutdown complete.",
    ]
    assert verdict(lines) == ("port-in-use", "crashed")


def test_engine_dead_after_ready_is_a_crash():
    lines = VLLM_START + VLLM_READY + VLLM_SERVING + [
        "CRITICAL 11-05 12:03:03 launcher.py:99] MQLLMEngine is already dead, terminating server process",
        'INFO:     10.0.0.7:58489 - "POST /v1/chat/completions HTTP/1.1" 500 Internal Server Error',
    ]
    assert verdict(lines) == ("engine-dead", "crashed")


def test_an_error_line_after_ready_is_not_healthy():
    lines = VLLM_START + VLLM_READY + VLLM_SERVING + [
        "ERROR 05-11 10:05:00 [serving_chat.py:200] Error in preprocessing prompt inputs",
    ]
    result = classify(lines)
    assert result.cls == "unknown" and result.state == "serving"


def test_http_500_burst_after_ready_is_engine_dead_and_one_500_is_not_healthy():
    five_hundred = 'INFO:     10.0.0.7:5{0:04d} - "POST /v1/completions HTTP/1.1" 500 Internal Server Error'
    one = verdict(VLLM_START + VLLM_READY + [five_hundred.format(1)])
    burst = verdict(VLLM_START + VLLM_READY + [five_hundred.format(i) for i in range(5)])
    assert one[0] == "unknown"
    assert burst == ("engine-dead", "crashed")


# ------------------------------------------------------------ root cause by kind and time
def test_killed_after_watchdog_timeouts_is_a_hang_then_killed():
    watchdog = "[2025-06-04 11:{0:02d}:00] Scheduler watchdog timeout (self.watchdog_timeout=300, self.soft=False)"
    lines = SGLANG_READY + [watchdog.format(10 + i) for i in range(8)] + ["Killed"]
    result = classify(lines)
    assert (result.cls, result.state) == ("hang", "crashed")
    assert result.line == 4  # the first watchdog timeout, not the kill


def test_a_hang_still_running_is_hung():
    lines = SGLANG_READY + [
        "(EngineCore_DP0 pid=3232) INFO 12-09 11:25:53 [shm_broadcast.py:466] No available shared memory "
        "broadcast block found in 60 seconds. This typically happens when some processes are hanging."]
    assert verdict(lines) == ("hang", "hung")


def test_engine_core_death_outranks_the_generic_traceback_it_causes():
    lines = VLLM_START + VLLM_READY + [
        "Traceback (most recent call last):",
        '  File "/usr/lib/python3.12/asyncio/tasks.py", line 520, in wait_for',
        "    return await fut",
        "asyncio.exceptions.CancelledError",
        "ERROR 05-11 10:09:00 [core_client.py:564] Engine core proc EngineCore_DP0 died unexpectedly, "
        "shutting down client.",
    ]
    assert verdict(lines) == ("engine-dead", "crashed")


def test_a_kill_before_any_cause_is_the_cause():
    lines = VLLM_START + [
        "[ 9121.332871] Out of memory: Killed process 4242 (python3) total-vm:812345612kB",
        "(VllmWorker rank=1 pid=4243) RuntimeError: NCCL error: unhandled system error (run with NCCL_DEBUG=INFO)",
    ]
    assert verdict(lines) == ("process-killed", "crashed")


def test_the_last_run_of_the_server_decides():
    crash = SGLANG_READY + [
        "[2025-06-04 11:02:11 TP3] Scheduler hit an exception: Traceback (most recent call last):",
        "RuntimeError: CUDA error: an illegal memory access was encountered",
    ]
    restarted = crash + SGLANG_READY
    assert verdict(crash) == ("cuda-illegal-address", "crashed")
    assert verdict(restarted) == ("healthy", "serving")
    crashed_again = restarted + ["torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB."]
    result = classify(crashed_again)
    assert result.cls == "oom" and result.line == len(crashed_again)


@pytest.mark.parametrize("function,cls", [
    ("get_config", "model-load"), ("load_weights", "model-load"), ("_init_tokenizer", "model-load"),
    ("ncclCommInitRank", "nccl"), ("determine_available_memory", "oom"),
])
def test_a_cut_off_traceback_is_judged_by_its_deepest_frame(function, cls):
    lines = VLLM_START + [
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/engine/arg_utils.py", line 1034, in create_engine_config',
        "    model_config = self.create_model_config()",
        f'  File "/opt/venv/lib/python3.12/site-packages/vllm/somewhere.py", line 77, in {function}',
        "    result = helper(",
    ]
    assert classify(lines).cls == cls


def test_the_final_exception_of_a_traceback_is_reported_with_its_frame():
    lines = [
        "Traceback (most recent call last):",
        '  File "/opt/venv/lib/python3.12/site-packages/vllm/entrypoints/openai/serving_chat.py", line 210, '
        "in create_chat_completion",
        "    template = self.chat_templates[name]",
        "KeyError: 'tool_use'",
    ]
    result = classify(lines)
    assert result.cls == "python-exception" and result.line == 4
    assert "create_chat_completion" in result.summary


# ------------------------------------------------------------ exits, signals, bind failures
@pytest.mark.parametrize("line", [
    "Killed",
    "torch.distributed.elastic.multiprocessing.api: failed (exitcode: -9) local_rank: 0",
    "[12-16 14:27:10] Exit code: -9",
    "    Last State:     Terminated\n      Reason:       OOMKilled\n      Exit Code:    137",
    '                        "exitCode": 137,',
    "ollama.service: Main process exited, code=killed, status=9/KILL",
    "Error: signal: killed",
])
def test_exit_codes_and_signals_of_a_kill(line):
    assert classify(VLLM_START + line.split("\n")).cls == "process-killed"


@pytest.mark.parametrize("line", [
    "OSError: [Errno 98] Address already in use",
    "OSError: [Errno 48] Address already in use",
    "ERROR:    [Errno 99] error while attempting to bind on address ('::1', 8000, 0, 0): cannot assign requested address",
    "ERROR:    [Errno 10048] error while attempting to bind on address ('127.0.0.1', 9880): only one usage of each "
    "socket address (protocol/network address/port) is normally permitted",
    "Error: listen tcp 127.0.0.1:11434: bind: Only one usage of each socket address (protocol/network address/port) "
    "is normally permitted.",
    "main: couldn't bind HTTP server socket, hostname: 127.0.0.1, port: 8080",
])
def test_bind_failures_on_every_os(line):
    assert classify([line]).cls == "port-in-use"


# ------------------------------------------------------------ carriers and encodings
def test_utf16_and_bom_files_read_like_utf8(tmp_path):
    text = "\n".join(VLLM_START + VLLM_READY + ["torch.OutOfMemoryError: CUDA out of memory."]) + "\n"
    plain = tmp_path / "plain.log"
    plain.write_text(text)
    expected = classify_file(plain).to_json()
    for name, data in {
        "utf16-bom.log": codecs.BOM_UTF16_LE + text.replace("\n", "\r\n").encode("utf-16-le"),
        "utf16-nobom.log": text.encode("utf-16-le"),
        "utf8-bom.log": codecs.BOM_UTF8 + text.encode(),
    }.items():
        path = tmp_path / name
        path.write_bytes(data)
        assert classify_file(path).to_json() == expected, name


@pytest.mark.parametrize("wrap", [
    lambda line: f"[vllm]: {line}",
    lambda line: f"> - {line}",
    lambda line: f"(APIServer pid=1391815) {line}",
])
def test_wrapper_prefixes_do_not_change_the_verdict(wrap):
    lines = VLLM_START + VLLM_READY + ["CRITICAL 11-05 12:03:03 launcher.py:99] MQLLMEngine is already dead, "
                                       "terminating server process"]
    assert verdict([wrap(line) for line in lines]) == ("engine-dead", "crashed")


# ------------------------------------------------------------ bounded memory
def test_a_huge_line_without_newline_keeps_memory_bounded(tmp_path):
    path = tmp_path / "one-line.log"
    with open(path, "wb") as out:
        out.write(b"RuntimeError: CUDA error: out of memory ")
        block = b"x" * (1 << 20)
        for _ in range(48):
            out.write(block)
    tracemalloc.start()
    try:
        result = classify_file(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert result.cls == "oom"  # the head of the line is kept
    assert peak < 32 << 20, f"peak {peak / 2**20:.0f} MiB for a 48 MiB line"


def test_cli_json_has_state_and_class(tmp_path):
    path = tmp_path / "loading.log"
    path.write_text("\n".join(VLLM_START) + "\n")
    proc = gpudeck("triage", str(path), "--json")
    assert proc.returncode == 0, proc.stderr
    doc = json.loads(proc.stdout)
    assert (doc["class"], doc["state"], doc["ready_seen"]) == ("unknown", "loading", False)


def test_one_pass_prefilter_and_plain_search_give_the_same_verdicts(monkeypatch):
    """The multi-literal pass is an accelerator only: forcing the per-key
    search path must not change a verdict, line or excerpt."""
    from console.servers.triage import prefilter

    filler = [f"[2025-06-04 11:{i // 60 % 60:02d}:{i % 60:02d} TP0] Decode batch. #running-req: {i % 97}, "
              f"#token: {i * 7}, token usage: 0.{i % 100:02d}, gen throughput (token/s): 812.{i % 10}"
              for i in range(4000)]
    cases = [
        SGLANG_READY + filler,
        SGLANG_READY + filler + ["[2025-06-04 12:02:11 TP3] Scheduler hit an exception: Traceback (most recent call last):",
                                 "RuntimeError: CUDA error: an illegal memory access was encountered", "Killed"],
        VLLM_START + filler + ["渲染 ████ 日志 ünïcödé"] + filler + ["OSError: [Errno 98] Address already in use"],
    ]
    assert prefilter.accelerated(), "install hyperscan (pip install 'hyperscan>=0.7') to test the accelerated path"
    fast = [classify(lines).to_json() for lines in cases]
    monkeypatch.setattr(prefilter, "FORCE_FALLBACK", True)
    slow = [classify(lines).to_json() for lines in cases]
    assert fast == slow
    assert [doc["class"] for doc in fast] == ["healthy", "cuda-illegal-address", "port-in-use"]


def test_arbitrary_text_never_raises():
    """Any text, however hostile, gets a verdict from the known vocabulary."""
    from hypothesis import given, settings
    from hypothesis import strategies as st

    from console.servers.triage import CLASSES, STATES, classify_text

    @settings(max_examples=300, deadline=None)
    @given(st.text(alphabet=st.characters(blacklist_categories=("Cs",)), max_size=400),
           st.sampled_from(["", "Killed\n", "INFO:     Application startup complete.\n", "Traceback (most recent call last):\n"]))
    def check(text, seed):
        result = classify_text(seed + text)
        assert result.cls in CLASSES and result.state in STATES
        json.dumps(result.to_json())

    check()


def test_uvicorn_start_inside_a_vllm_run_does_not_split_the_run():
    """vLLM prints its routes (ready) before uvicorn's "Started server process":
    an error between them still belongs to the same run."""
    lines = VLLM_START + [
        "INFO 05-11 10:02:00 [launcher.py:29] Available routes are:",
        "ERROR 05-11 10:02:00 [api_server.py:900] Error in preprocessing prompt inputs",
        "INFO:     Started server process [4242]",
        "INFO:     Application startup complete.",
    ]
    result = classify(lines)
    assert result.cls == "unknown" and result.state == "ready"
