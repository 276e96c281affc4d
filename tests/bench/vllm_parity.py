"""`gpudeck bench` against `vllm bench serve`, both as their users run them, on one real vLLM.

Both read the same JSONL of fixed prompts (every prompt once per run), with
the same output length (ignore_eos), the same concurrency, the same warm-up;
their runs alternate, which goes first swapping each round, after one untimed
round that fills vLLM's prefix cache for both. Both save vLLM's result JSON
(gpudeck with `--format vllm`), so the same keys are read from each.

Token counts must match exactly; the latencies and throughput must agree within
the spread (max - min) of the repeated runs, which the table prints.

    python tests/bench/vllm_parity.py [--url URL] [--runs 3] [--concurrency 4] [--prompts 16] [--output-len 32]

Without --url it starts a vLLM server (tests/vllm_part.py; bash tests/fetch_assets.sh prepares it).

Measured on a shared 2-core machine (defaults): counts equal (16 completed, 527
input and 512 output tokens, every run); every median within the spread, e.g.
TTFT p50 272.7 ms [171.8-479.8] against vLLM's 260.2 [224.4-407.1], TPOT p50
143.8 [120.9-174.5] against 159.7 [105.9-178.4], output 27.0 tok/s [21.9-32.9]
against 25.1 [21.0-33.1]. The spread is wide because other work shares the cores.
"""
from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _alternate import alternate  # noqa: E402  (this script's folder)

METRICS = (("median_ttft_ms", "TTFT p50 ms"), ("mean_ttft_ms", "TTFT mean ms"),
           ("median_tpot_ms", "TPOT p50 ms"), ("mean_tpot_ms", "TPOT mean ms"),
           ("median_itl_ms", "ITL p50 ms"), ("mean_itl_ms", "ITL mean ms"),
           ("output_throughput", "out tok/s"), ("request_throughput", "req/s"))
COUNTS = ("completed", "total_input_tokens", "total_output_tokens")

# Sentences of plain English, so the prompts are text a tokenizer sees every day.
WORDS = ("the operator watches a sweep of the server while the queue fills and the cache drains "
         "every request streams its tokens back to the client that measures how long each one takes").split()


def write_dataset(path: Path, count: int, output_len: int) -> None:
    """`count` distinct prompts; keys for both readers (gpudeck's output_len, vLLM's output_tokens)."""
    with path.open("w") as out:
        for i in range(count):
            words = [WORDS[(i * 7 + k * 3) % len(WORDS)] for k in range(24 + i % 9)]
            prompt = f"Request {i}: " + " ".join(words) + "."
            out.write(json.dumps({"prompt": prompt, "output_len": output_len, "output_tokens": output_len}) + "\n")


def run_gpudeck(url: str, dataset: Path, count: int, c: int, output_len: int, out: Path, env: dict) -> dict:
    subprocess.run([sys.executable, "-m", "console", "bench", "--url", url, "--model", "smol",
                    "--dataset", str(dataset), "--dataset-format", "jsonl", "--num-prompts", str(count),
                    "--concurrency", str(c), "--output-len", str(output_len), "--warmup", "1",
                    "--format", "vllm", "--out", str(out)],
                   check=True, cwd=ROOT, env=env, stdout=subprocess.DEVNULL)
    return json.loads(out.read_text())


def run_vllm(vllm: Path, model_dir: Path, url: str, dataset: Path, count: int, c: int, output_len: int,
             out: Path, env: dict) -> dict:
    subprocess.run([str(vllm), "bench", "serve", "--backend", "openai", "--base-url", url,
                    "--endpoint", "/v1/completions", "--model", "smol", "--tokenizer", str(model_dir),
                    "--dataset-name", "custom", "--dataset-path", str(dataset), "--num-prompts", str(count),
                    "--custom-output-len", str(output_len), "--skip-chat-template", "--ignore-eos",
                    "--max-concurrency", str(c), "--request-rate", "inf", "--num-warmups", "1",
                    "--percentile-metrics", "ttft,tpot,itl,e2el", "--disable-tqdm",
                    "--save-result", "--result-dir", str(out.parent), "--result-filename", out.name],
                   check=True, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return json.loads(out.read_text())


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--url")
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=16)
    parser.add_argument("--output-len", type=int, default=32)
    args = parser.parse_args()

    from tests.vllm_part import private_env, start_vllm, vllm_assets

    vllm, model_dir = vllm_assets()
    work = Path(tempfile.mkdtemp(prefix="gpudeck-parity-"))
    server = None
    if not args.url:
        server = start_vllm(work / "server")
        args.url = server.url
        print(f"vLLM ready in {server.started_s:.0f} s", flush=True)
    env = {**os.environ, **private_env(work / "client"), "GPUDECK_HOME": str(work / "home")}
    dataset = work / "prompts.jsonl"
    write_dataset(dataset, args.prompts, args.output_len)
    results: dict[str, list[dict]] = {"gpudeck": [], "vllm": []}
    try:
        common = (args.url, dataset, args.prompts, args.concurrency, args.output_len)
        run_gpudeck(*common, work / "warm-g.json", env)  # fills the prefix cache for both clients
        for run, order in alternate(("gpudeck", "vllm"), args.runs):
            for name in order:
                out = work / f"{name}-{run}.json"
                started = time.monotonic()
                if name == "gpudeck":
                    doc = run_gpudeck(*common, out, env)
                else:
                    doc = run_vllm(vllm, model_dir, *common, out, env)
                results[name].append(doc)
                print(f"run {run + 1} {name:<7} {time.monotonic() - started:5.1f} s  "
                      + "  ".join(f"{key}={doc.get(key)}" for key in COUNTS), flush=True)
    finally:
        if server is not None:
            server.stop()

    print(f"\n{args.prompts} prompts, output {args.output_len} tokens (ignore_eos), concurrency "
          f"{args.concurrency}, {args.runs} interleaved runs per client; median [min-max] of the runs")
    ok = True
    for key in COUNTS:
        values = {name: sorted({doc.get(key) for doc in docs}) for name, docs in results.items()}
        same = values["gpudeck"] == values["vllm"] and len(values["gpudeck"]) == 1
        ok &= same
        print(f"{key:<22} gpudeck {values['gpudeck']}  vllm {values['vllm']}  {'equal' if same else 'DIFFER'}")
    print(f"\n{'metric':<14} {'gpudeck':>24} {'vllm bench serve':>24} {'diff':>8} {'spread':>8}  verdict")
    for key, label in METRICS:
        cols = {}
        for name, docs in results.items():
            vals = [float(d[key]) for d in docs if d.get(key) is not None]
            cols[name] = vals
        if not cols["gpudeck"] or not cols["vllm"]:
            print(f"{label:<14} {'N/A':>24} {'N/A':>24}")
            ok = False
            continue
        g, v = statistics.median(cols["gpudeck"]), statistics.median(cols["vllm"])
        spread = max(max(vals) - min(vals) for vals in cols.values())
        agree = abs(g - v) <= spread
        ok &= agree
        show = lambda vals, m: f"{m:.2f} [{min(vals):.2f}-{max(vals):.2f}]"  # noqa: E731
        print(f"{label:<14} {show(cols['gpudeck'], g):>24} {show(cols['vllm'], v):>24} {g - v:>8.2f} "
              f"{spread:>8.2f}  {'within spread' if agree else 'OUTSIDE spread'}")
    print(f"\nresult files in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
