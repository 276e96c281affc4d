"""The tracebacks the simulator writes when a configured fault fires.

Each one has the shape of the real failure in an sglang log (see the
corpus under shared/corpus/logs): the scheduler's traceback through
sglang's own modules, the decisive error line, then the parent noticing its
child died. Triage must classify them as it classifies the real ones:
illegal-address -> cuda-illegal-address, oom -> oom, nccl -> nccl.
A hang writes nothing at all: the log just stops.
"""
from __future__ import annotations

from .sglang_log import LogWriter

SITE = "/usr/local/lib/python3.12/dist-packages"
SGL = f"{SITE}/sglang/srt"

# Exit statuses: a Python error that kills the server exits 1; NCCL's watchdog
# calls std::terminate, so the process dies of SIGABRT (134 as a shell reports it).
EXIT_STATUS = {"illegal-address": 1, "oom": 1, "nccl": 134}

_CUDA_HINTS = [
    "CUDA kernel errors might be asynchronously reported at some other API call, "
    "so the stacktrace below might be incorrect.",
    "For debugging consider passing CUDA_LAUNCH_BLOCKING=1",
    "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.",
]


def _frames(frames: list[tuple[str, int, str, str]]) -> list[str]:
    out = []
    for path, line, func, code in frames:
        out.append(f'  File "{path}", line {line}, in {func}')
        out.append(f"    {code}")
    return out


def illegal_address(log: LogWriter, rank: int) -> None:
    """cudaErrorIllegalAddress in a decode step, as the scheduler reports it."""
    log.line("Scheduler hit an exception: Traceback (most recent call last):", rank)
    body = _frames([
        (f"{SGL}/managers/scheduler.py", 2867, "run_scheduler_process", "scheduler.event_loop_overlap()"),
        (f"{SITE}/torch/utils/_contextlib.py", 120, "decorate_context", "return func(*args, **kwargs)"),
        (f"{SGL}/managers/scheduler.py", 1012, "event_loop_overlap", "self.process_batch_result(tmp_batch, tmp_result)"),
        (f"{SGL}/managers/scheduler.py", 2031, "process_batch_result", "self.process_batch_result_decode(batch, result)"),
        (f"{SGL}/managers/scheduler_output_processor_mixin.py", 241, "process_batch_result_decode",
         "next_token_ids = next_token_ids.tolist()"),
    ])
    for text in body:
        log.raw(text)
    log.raw("RuntimeError: CUDA error: an illegal memory access was encountered")
    for hint in _CUDA_HINTS:
        log.raw(hint)
    log.raw("")
    log.raw("")
    log.line("Received sigquit from a child process. It usually means the child failed.")


def oom(log: LogWriter, rank: int, total_gib: float, free_mib: int) -> None:
    """CUDA out of memory while capturing CUDA graphs at startup."""
    log.line("Scheduler hit an exception: Traceback (most recent call last):", rank)
    body = _frames([
        (f"{SGL}/managers/scheduler.py", 2852, "run_scheduler_process",
         "scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, moe_ep_rank, pp_rank, dp_rank)"),
        (f"{SGL}/managers/scheduler.py", 318, "__init__", "self.tp_worker = TpWorkerClass("),
        (f"{SGL}/managers/tp_worker.py", 81, "__init__", "self.model_runner = ModelRunner("),
        (f"{SGL}/model_executor/model_runner.py", 242, "__init__", "self.initialize(min_per_gpu_memory)"),
        (f"{SGL}/model_executor/model_runner.py", 331, "initialize", "self.init_device_graphs()"),
        (f"{SGL}/model_executor/model_runner.py", 1712, "init_device_graphs",
         "self.graph_runner = graph_runners[self.device](self)"),
        (f"{SGL}/model_executor/cuda_graph_runner.py", 382, "__init__", "self.capture()"),
        (f"{SITE}/torch/cuda/memory.py", 1147, "empty_cache", "torch._C._cuda_emptyCache()"),
    ])
    for text in body:
        log.raw(text)
    log.raw(f"torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU {rank} has a total "
            f"capacity of {total_gib:.2f} GiB of which {free_mib:.2f} MiB is free. Including non-PyTorch "
            f"memory, this process has {total_gib - free_mib / 1024:.2f} GiB memory in use. "
            "Of the allocated memory the KV cache pool holds most; try a lower --mem-fraction-static.")
    log.raw("")
    log.line("Received sigquit from a child process. It usually means the child failed.")


def nccl_watchdog(log: LogWriter, rank: int, seq: int, timeout_ms: int) -> None:
    """The process-group watchdog giving up on an all-reduce that never finished."""
    torch_lib = f"{SITE}/torch/lib"
    log.line(f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
             f"OpType=ALLREDUCE, NumelIn=12582912, NumelOut=12582912, Timeout(ms)={timeout_ms}) ran for "
             f"{timeout_ms + 17} milliseconds before timing out.", rank)
    log.raw(f"[rank{rank}]:[E ProcessGroupNCCL.cpp:1895] [PG ID 0 PG GUID 0(default_pg) Rank {rank}] "
            "Process group watchdog thread terminated with exception: "
            f"[Rank {rank}] Watchdog caught collective operation timeout: WorkNCCL(SeqNum={seq}, "
            f"OpType=ALLREDUCE, NumelIn=12582912, NumelOut=12582912, Timeout(ms)={timeout_ms}) ran for "
            f"{timeout_ms + 17} milliseconds before timing out.")
    frames = [
        "c10::Error::Error(c10::SourceLocation, std::string) + 0x98 (0x7f2a1c3b8446 in {lib}/libc10.so)",
        "c10d::ProcessGroupNCCL::WorkNCCL::checkTimeout(std::optional<std::chrono::duration<long, "
        "std::ratio<1l, 1000l> > >) + 0x282 (0x7f2a1d6f0772 in {lib}/libtorch_cuda.so)",
        "c10d::ProcessGroupNCCL::watchdogHandler() + 0x233 (0x7f2a1d6f7bb3 in {lib}/libtorch_cuda.so)",
        "c10d::ProcessGroupNCCL::ncclCommWatchdog() + 0x14d (0x7f2a1d6f961d in {lib}/libtorch_cuda.so)",
        "<unknown function> + 0xdc253 (0x7f2a6a9b0253 in /usr/lib/x86_64-linux-gnu/libstdc++.so.6)",
        "<unknown function> + 0x94ac3 (0x7f2a6f2b4ac3 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
        "clone + 0x44 (0x7f2a6f345a04 in /usr/lib/x86_64-linux-gnu/libc.so.6)",
    ]
    log.raw("Exception raised from checkTimeout at /pytorch/torch/csrc/distributed/c10d/"
            "ProcessGroupNCCL.cpp:632 (most recent call first):")
    for i, frame in enumerate(frames):
        log.raw(f"frame #{i}: {frame.format(lib=torch_lib)}")
    log.raw("")
    log.raw("terminate called after throwing an instance of 'c10::DistBackendError'")
    log.raw(f"  what():  [PG ID 0 PG GUID 0(default_pg) Rank {rank}] Process group watchdog thread terminated "
            f"with exception: [Rank {rank}] Watchdog caught collective operation timeout: "
            f"WorkNCCL(SeqNum={seq}, OpType=ALLREDUCE, NumelIn=12582912, NumelOut=12582912, "
            f"Timeout(ms)={timeout_ms}) ran for {timeout_ms + 17} milliseconds before timing out.")
    log.line("Received sigquit from a child process. It usually means the child failed.")
