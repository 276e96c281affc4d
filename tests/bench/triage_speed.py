"""Triage speed on a 1,000,000-line log against `grep -E` with the same patterns.

Generates a realistic sglang log (startup, a million progress / access
lines, an illegal-address cascade at the end), then times
`console.servers.triage.classify_file` and `grep -E -f PATTERNS` (GNU grep, its
matches written to a file: with stdout on /dev/null GNU grep stops at the
first match, which would not be the same work) over it, best of three each,
in the default locale and with LC_ALL=C, and prints the ratios. Goal: <= 3x
against LC_ALL=C. The patterns handed to grep are every rule of the rules
file (failure signatures, lifecycle signs, server markers). Triage finds
candidate lines with one multi-literal pass (hyperscan) when it is
installed, and says which path it took.

    .venv/bin/python tests/bench/triage_speed.py [--lines N]
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
    parser.add_argument("--c-locale-only", action="store_true",
                        help="skip grep in the default locale (minutes on a UTF-8 locale)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        log = Path(tmp) / "big.log"
        patterns = Path(tmp) / "patterns.txt"
        write_log(log, args.lines)
        patterns.write_text("\n".join(rule.pattern for rule in default_rules().rules) + "\n")
        size_mb = log.stat().st_size / 1e6
        result = classify_file(log)
        print(f"log: {args.lines} lines, {size_mb:.1f} MB; verdict {result.cls} at line {result.line}")

        matches = Path(tmp) / "matches.txt"

        def grep_in(locale: str | None):
            env = dict(os.environ, LC_ALL=locale) if locale else None

            def run() -> None:
                with open(matches, "w") as out:
                    subprocess.run(["grep", "-E", "-f", str(patterns), str(log)], stdout=out, env=env, check=False)
            return run

        triage_s = best_of(3, lambda: classify_file(log))
        grep_default = None if args.c_locale_only else best_of(3, grep_in(None))
        grep_c = best_of(3, grep_in("C"))
        count = len(default_rules().rules)
        locale = os.environ.get("LC_ALL") or os.environ.get("LANG") or "unset"
        path = "one multi-literal pass (hyperscan)" if prefilter.accelerated() else "per-key str.find"
        print(f"gpudeck triage ({path}): {triage_s:.3f} s")
        if grep_default is not None:
            print(f"grep -E, {count} patterns, locale {locale}: {grep_default:.3f} s  ratio {triage_s / grep_default:.2f}x")
        print(f"grep -E, {count} patterns, LC_ALL=C:      {grep_c:.3f} s  ratio {triage_s / grep_c:.2f}x  (goal <= 3x)")


if __name__ == "__main__":
    main()
