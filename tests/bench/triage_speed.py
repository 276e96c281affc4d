"""Triage speed on 1,000,000-line logs against `grep -E` with the same patterns.

Log shapes: a generated sglang log (startup, a million progress / access
lines, an illegal-address cascade at the end), and real serving logs of
vLLM (v0 and v1), sglang and llama.cpp from the project's corpora, each
repeated to the line count (a repeat holds its start banner: a new run of
the server each time, the worst case for a reader that keeps per-run
state). For each it times
`console.servers.triage.classify_file` and `grep -E -f PATTERNS` (GNU grep, its
matches written to a file: with stdout on /dev/null GNU grep stops at the
first match, which would not be the same work) over it, best of three each,
in the default locale and with LC_ALL=C, and prints the ratios. Goal: <= 3x
against LC_ALL=C. The patterns handed to grep are every rule of the rules
file (failure signatures, lifecycle signs, server markers). Triage finds
candidate lines with one multi-literal pass (hyperscan) when it is
installed, and says which path it took.

    .venv/bin/python tests/bench/triage_speed.py [--lines N] [--shape NAME ...]
"""
from __future__ import annotations

import argparse
import os
import random
import subprocess
import tempfile
import time
from pathlib import Path

from console.servers.triage import classify_file, default_rules, prefilter

TESTS = Path(__file__).resolve().parent.parent
CORPUS = TESTS / "triage_corpus" / "logs"
SHARED = TESTS / "fixtures" / "shared" / "corpus" / "logs"
# Real serving logs (healthy runs: startup, requests, metrics, warnings), by shape.
REAL_SHAPES = {
    "vllm-v0 serving": [CORPUS / "vllm-2731-v0-throughput-finished-requests-200.log",
                        CORPUS / "vllm-kserve-4470-trace-access-log-metrics.log",
                        CORPUS / "vllm-9193-k8s-health-200-heartbeat.log",
                        SHARED / "runtime-progress" / "03-vllm-v0-metrics-with-404s.log"],
    "vllm-v1 serving": [CORPUS / "vllm-16361-v1-engine-stats-added-request.log",
                        CORPUS / "vllm-dynamo-4087-kvbm-serving-then-connector-lines.log",
                        SHARED / "runtime-progress" / "01-vllm-v1-engine000-throughput-high-kv-usage.log",
                        SHARED / "healthy-startup" / "05-vllm-starting-server-and-routes.log"],
    # ERROR lines between answered requests: each failure notice makes triage look again for
    # an answered request after it (the worst case of the lifecycle reading)
    "vllm-v1 request errors": [CORPUS / "vllm-15018-startup-then-model-not-found-errors.log",
                               CORPUS / "vllm-40856-idle-throughput-then-one-500.log"],
    "sglang serving": [SHARED / "runtime-progress" / name for name in (
                           "05-sglang-decode-batch-comma-format-high-token-usage.log",
                           "07-sglang-decode-batch-drain-cuda-graph-toggle.log",
                           "09-sglang-npu-tp0-ep0-spec-accept-len-npu-graph.log",
                           "11-sglang-swa-full-token-usage-prefill.log")]
                      + [CORPUS / "sglang-18785-hicache-prefill-and-200s.log"],
    "llama.cpp serving": [CORPUS / "llamacpp-19408-print-timing-done-request-infill.log",
                          CORPUS / "llamacpp-pi-llama-19-newfmt-slot-processing.log",
                          SHARED / "healthy-startup" / "09-llama-server-newfmt-model-loaded-listening.log"],
}


def write_repeated(path: Path, sources: list[Path], count: int) -> None:
    """The sources' lines, in order, repeated until `count` lines are written."""
    lines = [line for source in sources for line in source.read_text(errors="replace").splitlines()]
    with open(path, "w") as out:
        written = 0
        while written < count:
            chunk = lines[: count - written]
            out.write("\n".join(chunk) + "\n")
            written += len(chunk)


def write_log(path: Path, count: int) -> None:
    rng = random.Random(7)
    with open(path, "w") as out:
        out.write("[2025-06-02 13:58:01] server_args=ServerArgs(model_path='deepseek-ai/DeepSeek-V3', tp_size=8)\n")
        out.write("[2025-06-02 14:00:40] The server is fired up and ready to roll!\n")
        for i in range(count - 8):
            kind = i % 10
            stamp = f"2025-06-02 {14 + i // 360000:02d}:{(i // 6000) % 60:02d}:{(i // 100) % 60:02d}"
            if kind < 6:
                running = rng.randint(1, 512)
                out.write(f"[{stamp} TP0] Decode batch. #running-req: {running}, #token: {running * 811}, "
                          f"token usage: {rng.random():.2f}, cuda graph: {running < 160}, "
                          f"gen throughput (token/s): {rng.uniform(200, 5000):.2f}, #queue-req: {rng.randint(0, 40)}\n")
            elif kind < 8:
                out.write(f"[{stamp} TP0] Prefill batch. #new-seq: 1, #new-token: {rng.randint(64, 8192)}, "
                          f"#cached-token: {rng.randint(0, 4096)}, token usage: {rng.random():.2f}, #running-req: 12, #queue-req: 0\n")
            else:
                out.write(f"[{stamp}] INFO:     10.0.{rng.randint(0, 255)}.{rng.randint(0, 255)}:{rng.randint(30000, 60000)}"
                          f" - \"POST /v1/chat/completions HTTP/1.1\" 200 OK\n")
        out.write("[2025-06-02 18:02:11 TP3] Scheduler hit an exception: Traceback (most recent call last):\n")
        out.write('  File "/sgl-workspace/sglang/python/sglang/srt/managers/scheduler.py", line 2421, in run_scheduler_process\n')
        out.write("RuntimeError: CUDA error: an illegal memory access was encountered\n")
        out.write("CUDA kernel errors might be asynchronously reported at some other API call.\n")
        out.write("[2025-06-02 18:02:11] Received sigquit from a child process. It usually means the child failed.\n")
        out.write("Killed\n")


def best_of(runs: int, func) -> float:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        func()
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--lines", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3, help="best of this many runs each")
    parser.add_argument("--shape", action="append", choices=["sglang synthetic", *REAL_SHAPES],
                        help="only these log shapes (default: all)")
    parser.add_argument("--c-locale-only", action="store_true",
                        help="skip grep in the default locale (minutes on a UTF-8 locale)")
    args = parser.parse_args()
    shapes = args.shape or ["sglang synthetic", *REAL_SHAPES]
    count = len(default_rules().rules)
    path = "one multi-literal pass (hyperscan)" if prefilter.accelerated() else "per-key str.find"
    print(f"gpudeck triage ({path}) against grep -E with the same {count} patterns, best of {args.runs}")
    ratios = {}
    with tempfile.TemporaryDirectory() as tmp:
        patterns = Path(tmp) / "patterns.txt"
        patterns.write_text("\n".join(rule.pattern for rule in default_rules().rules) + "\n")
        matches = Path(tmp) / "matches.txt"
        for shape in shapes:
            log = Path(tmp) / "big.log"
            if shape == "sglang synthetic":
                write_log(log, args.lines)
            else:
                write_repeated(log, REAL_SHAPES[shape], args.lines)
            size_mb = log.stat().st_size / 1e6
            result = classify_file(log)

            def grep_in(locale: str | None):
                env = dict(os.environ, LC_ALL=locale) if locale else None

                def run() -> None:
                    with open(matches, "w") as out:
                        subprocess.run(["grep", "-E", "-f", str(patterns), str(log)], stdout=out, env=env,
                                       check=False)
                return run

            triage_s = best_of(args.runs, lambda: classify_file(log))
            grep_c = best_of(args.runs, grep_in("C"))
            print(f"{shape}: {args.lines} lines, {size_mb:.1f} MB, verdict {result.cls}/{result.state}")
            print(f"  triage {triage_s:.3f} s · grep -E LC_ALL=C {grep_c:.3f} s · ratio {triage_s / grep_c:.2f}x"
                  f"  (goal <= 3x)")
            if not args.c_locale_only:
                grep_default = best_of(1, grep_in(None))
                locale = os.environ.get("LC_ALL") or os.environ.get("LANG") or "unset"
                print(f"  grep -E locale {locale}: {grep_default:.3f} s · ratio {triage_s / grep_default:.2f}x")
            ratios[shape] = triage_s / grep_c
    print("ratios against LC_ALL=C grep: " + ", ".join(f"{k} {v:.2f}x" for k, v in ratios.items()))


if __name__ == "__main__":
    main()
