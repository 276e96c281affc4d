"""The simulator's log, line for line in the formats sglang itself writes.

Triage rules and the Server pane read these lines exactly as they read a
real sglang log: `server_args=ServerArgs(...)`, weight loading, KV cache
allocation, the ready line, periodic `Decode batch.` lines. One extra line at
startup says SIMULATED so that nobody mistakes the log for a real server's.
"""
from __future__ import annotations

import os
import sys
import time
from datetime import datetime
from typing import IO, Any

from .config import SimConfig
from .memory import MemoryPlan

READY_LINE = "The server is fired up and ready to roll!"


class LogWriter:
    """Timestamped lines, flushed at once (a crash must not lose the last ones)."""

    def __init__(self, stream: IO[str]):
        self.stream = stream

    @classmethod
    def open(cls, path) -> "LogWriter":
        if path is None:
            return cls(sys.stdout)
        return cls(open(path, "a", buffering=1, encoding="utf-8"))

    def stamp(self, rank: int | None = None) -> str:
        now = datetime.now().strftime("%Y-%m-%d %H:%M:%S")
        return f"[{now} TP{rank}]" if rank is not None else f"[{now}]"

    def line(self, message: str, rank: int | None = None) -> None:
        self.raw(f"{self.stamp(rank)} {message}")

    def raw(self, text: str) -> None:
        try:
            self.stream.write(text + "\n")
            self.stream.flush()
        except (OSError, ValueError):
            pass

    def sync(self) -> None:
        try:
            self.stream.flush()
            os.fsync(self.stream.fileno())
        except (OSError, ValueError, AttributeError):
            pass


def _py(value: Any) -> str:
    """A value as Python's repr writes it inside ServerArgs(...)."""
    return repr(value)


def server_args_line(cfg: SimConfig, quantization: str | None) -> str:
    model_path = cfg.model  # as the launch script named it (a path or a hub id)
    fields: list[tuple[str, Any]] = [
        ("model_path", model_path), ("tokenizer_path", model_path), ("tokenizer_mode", "auto"),
        ("skip_tokenizer_init", False), ("load_format", "auto"), ("trust_remote_code", True),
        ("dtype", "auto"), ("kv_cache_dtype", "fp8_e4m3"), ("quantization", quantization),
        ("context_length", None), ("device", "cuda"), ("served_model_name", cfg.model),
        ("chat_template", None), ("is_embedding", False), ("revision", None),
        ("host", cfg.host), ("port", cfg.port),
        ("mem_fraction_static", cfg.mem_fraction), ("max_running_requests", cfg.max_running_requests),
        ("max_total_tokens", None), ("chunked_prefill_size", 8192), ("max_prefill_tokens", 16384),
        ("schedule_policy", "fcfs"), ("schedule_conservativeness", 1.0), ("page_size", 1),
        ("tp_size", cfg.tp), ("pp_size", 1), ("stream_interval", 1), ("stream_output", False),
        ("random_seed", cfg.seed), ("watchdog_timeout", 300), ("dist_timeout", None),
        ("log_level", "info"), ("enable_metrics", True), ("decode_log_interval", 40),
        ("dp_size", 1), ("load_balance_method", "round_robin"), ("nnodes", 1), ("node_rank", 0),
        ("attention_backend", None), ("sampling_backend", "flashinfer"), ("grammar_backend", "xgrammar"),
        ("speculative_algorithm", None), ("ep_size", cfg.ep), ("enable_ep_moe", cfg.ep > 1),
        ("moe_runner_backend", "auto"), ("cuda_graph_max_bs", cfg.cuda_graph_max_bs), ("disable_cuda_graph", False),
        ("disable_custom_all_reduce", False), ("enable_dp_attention", False),
        ("enable_torch_compile", False), ("disable_overlap_schedule", False),
    ]
    inner = ", ".join(f"{k}={_py(v)}" for k, v in fields)
    return f"server_args=ServerArgs({inner})"


def decode_batch_line(running: int, tokens: int, usage: float, throughput: float, queued: int,
                      cuda_graph: bool = True) -> str:
    return (f"Decode batch. #running-req: {running}, #token: {tokens}, token usage: {usage:.2f}, "
            f"cuda graph: {cuda_graph}, gen throughput (token/s): {throughput:.2f}, #queue-req: {queued}, ")


def prefill_batch_line(new_seq: int, new_tokens: int, usage: float, running: int, queued: int) -> str:
    return (f"Prefill batch. #new-seq: {new_seq}, #new-token: {new_tokens}, #cached-token: 0, "
            f"token usage: {usage:.2f}, #running-req: {running}, #queue-req: {queued}, ")


def gib(mib: float) -> str:
    return f"{mib / 1024:.2f}"


class StartupScript:
    """The startup lines in order, each with the share of startup time before it."""

    def __init__(self, cfg: SimConfig, mem: MemoryPlan, arch: str, quantization: str | None,
                 timer_source: str, ideal_tok_s: float | None, shards: int = 40):
        self.cfg, self.mem, self.arch, self.quant = cfg, mem, arch, quantization
        self.timer_source, self.ideal_tok_s, self.shards = timer_source, ideal_tok_s, shards

    def banner(self, log: LogWriter) -> None:
        cfg = self.cfg
        ideal = f"{self.ideal_tok_s:.1f} tok/s ideal single stream, " if self.ideal_tok_s else ""
        log.line(f"SIMULATED server (gpudeck sim): not real sglang, no GPU is used. "
                 f"{cfg.count}x {cfg.gpu}, TP{cfg.tp}, {ideal}efficiency {cfg.efficiency * 100:.1f}% "
                 f"(timing: {self.timer_source}); pid {os.getpid()}")

    def before_load(self, log: LogWriter) -> None:
        log.line(server_args_line(self.cfg, self.quant))
        for rank in range(self.cfg.tp):
            log.line("Init torch distributed begin.", rank)
        for rank in range(self.cfg.tp):
            log.line("Init torch distributed ends. mem usage=0.52 GB", rank)
        avail = self.mem.total_mib - 620
        log.line(f"Load weight begin. avail mem={gib(avail)} GB", 0)

    def shard_line(self, done: int, elapsed: float) -> str:
        pct = int(100 * done / self.shards)
        rate = done / elapsed if elapsed > 0 else 0.0
        return (f"Loading safetensors checkpoint shards: {pct:3d}% Completed | {done}/{self.shards} "
                f"[{int(elapsed) // 60:02d}:{int(elapsed) % 60:02d}<00:00, {rate:5.2f}it/s]")

    def after_load(self, log: LogWriter) -> None:
        mem = self.mem
        avail_after = mem.total_mib - 620 - mem.weights_mib
        for rank in range(self.cfg.tp):
            log.line(f"Load weight end. type={self.arch}, dtype=torch.bfloat16, "
                     f"avail mem={gib(avail_after)} GB, mem usage={gib(mem.weights_mib)} GB.", rank)

    def kv_and_ready(self, log: LogWriter) -> None:
        mem, cfg = self.mem, self.cfg
        for rank in range(cfg.tp):
            log.line(f"KV Cache is allocated. #tokens: {mem.kv_tokens}, KV size: {gib(mem.kv_mib)} GB", rank)
        free = mem.total_mib - 620 - mem.static_mib
        log.line(f"Memory pool end. avail mem={gib(free)} GB", 0)
        log.line(f"Capture cuda graph begin. This can take up to several minutes. avail mem={gib(free)} GB", 0)
        log.line(f"Capture cuda graph end. Time elapsed: {max(0.1, cfg.startup_s * 0.2):.2f} s. "
                 f"mem usage={gib(1350)} GB. avail mem={gib(free - 1350)} GB.", 0)
        log.line(f"max_total_num_tokens={mem.kv_tokens}, chunked_prefill_size=8192, max_prefill_tokens=16384, "
                 f"max_running_requests={cfg.max_running_requests}, context_len=202752, "
                 f"available_gpu_mem={gib(free - 1350)} GB", 0)

    def uvicorn(self, log: LogWriter) -> None:
        cfg = self.cfg
        log.line(f"INFO:     Started server process [{os.getpid()}]")
        log.line("INFO:     Waiting for application startup.")
        log.line("INFO:     Application startup complete.")
        log.line(f"INFO:     Uvicorn running on http://{cfg.host}:{cfg.port} (Press CTRL+C to quit)")


def now_s() -> float:
    return time.time()
