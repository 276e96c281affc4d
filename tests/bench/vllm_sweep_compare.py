"""A gpudeck campaign over a `[[grid]]` of vLLM flags against `vllm bench sweep serve` over the same values.

Both launch a real vLLM (CPU build) per config from the same `vllm serve`
command (eager, prefix caching off, so neither client warms the other's cache),
and both measure it with one JSONL of fixed prompts, one output length
(ignore_eos), one concurrency and one untimed warm-up request. They alternate by
rounds, which one goes first swapping each round; in a round each tool starts
every config afresh once (gpudeck's campaign with `repeats = 1`, vLLM's sweep
with `--num-runs 1`), so both see the same number of server starts and the same
drift of a shared machine.

It prints each tool's ranking by output throughput and, per config, the median
[min-max] of the rounds for output tok/s, TTFT p50 and TPOT p50, with a verdict:
the rankings agree or not, and each pair of medians is within the spread of
the rounds (the larger of the two tools' max - min) or not.

The first round's campaign also holds one config vLLM cannot start (an
impossible --max-model-len): its cell must end crashed with triage's class.

    python tests/bench/vllm_sweep_compare.py [--rounds 2] [--seqs 1,2,4] [--batched-tokens 512,2048]
        [--concurrency 4] [--prompts 8] [--output-len 24]

bash tests/fetch_assets.sh prepares vLLM. About 15-20 minutes on a shared 2-core machine with the
defaults (12 vLLM starts of 60-110 s each there, plus the failing one).

Measured there with the defaults (another vLLM of someone else's tests ran beside it, hence
the spread); both rank seqs=4 > seqs=2 > seqs=1, and every median is within the spread:

    config  metric        gpudeck campaign          vllm bench sweep          diff    spread
    seqs=1  out tok/s     17.54 [17.54-17.54]*      14.29 [7.75-20.83]        3.24    13.08
    seqs=1  TTFT p50 ms   3891.18 [3891.18-3891.18]* 5621.11 [3414.38-7827.84] -1729.93 4413.47
    seqs=1  TPOT p50 ms   52.66 [52.66-52.66]*      83.88 [47.47-120.29]     -31.21    72.82
    seqs=2  out tok/s     28.53 [25.65-31.41]       29.27 [27.37-31.18]      -0.74     5.76
    seqs=2  TTFT p50 ms   1691.19 [1534.95-1847.43] 1586.26 [1523.00-1649.52] 104.93  312.47
    seqs=2  TPOT p50 ms   68.34 [60.42-76.27]       65.95 [63.27-68.62]       2.40    15.86
    seqs=4  out tok/s     47.85 [39.73-55.98]       52.66 [45.40-59.92]      -4.80    16.25
    seqs=4  TTFT p50 ms   263.87 [139.18-388.56]    149.20 [136.56-161.84]  114.67   249.39
    seqs=4  TPOT p50 ms   77.46 [67.00-87.91]       74.25 [63.06-85.45]       3.20    22.39

    * one round: in the first, the campaign took vLLM's "Starting vLLM server on" line for
      readiness before its port was bound, and the cell's bench found it closed (fixed since:
      console/servers/monitor.py waits for /health; tests/test_vllm_ready_before_bind.py).
    The impossible --max-model-len cell: start-failed, class model-load.
"""
from __future__ import annotations

import argparse
import itertools
import json
import os
import shlex
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from _alternate import alternate  # noqa: E402  (this script's folder)

from tests.cli import gpudeck  # noqa: E402

METRICS = (("output_throughput", "out tok/s"), ("ttft_p50", "TTFT p50 ms"), ("tpot_p50", "TPOT p50 ms"))
VLLM_KEYS = {"output_throughput": "output_throughput", "ttft_p50": "median_ttft_ms", "tpot_p50": "median_tpot_ms"}
SERVE_EXTRA = ("--no-enable-prefix-caching",)


def axes(args) -> dict[str, list[int]]:
    found = {"--max-num-seqs": args.seqs}
    if args.batched_tokens:
        found["--max-num-batched-tokens"] = args.batched_tokens
    return found


def combos(args) -> list[dict[str, int]]:
    grid = axes(args)
    return [dict(zip(grid, values)) for values in itertools.product(*grid.values())]


def label(combo: dict[str, int]) -> str:
    return ",".join(f"{k.lstrip('-').replace('max-num-', '')}={v}" for k, v in combo.items())


def run_campaign(work: Path, rnd: int, args, dataset: Path, env: dict, with_failure: bool) -> dict:
    """One gpudeck campaign round: every grid cell once; returns {label: level row} and the failure cell."""
    flags = ", ".join(f'"{k}" = {json.dumps(v)}' for k, v in axes(args).items())
    failure = '[[config]]\nname = "smol-vllm-bad-len"\n\n' if with_failure else ""
    campaign = work / f"campaign-{rnd}.toml"
    campaign.write_text(
        f"[sweep]\nlevels = [{args.concurrency}]\noutput_len = {args.output_len}\nnum_prompts = {args.prompts}\n"
        f'dataset = "{dataset}"\nmodel = "smol"\nrepeats = 1\n\n'
        f"{failure}[[grid]]\nbase = \"smol-vllm\"\nflags = {{ {flags} }}\n\n"
        "[policy]\nready_timeout_s = 420\ngpu_idle_timeout_s = 5\nmin_effect = 2.0\n")
    out = gpudeck("campaign", "run", str(campaign), "-p", "vsweep", "--foreground", "--json", env=env, timeout=1800)
    if out.returncode != 0:
        raise SystemExit(f"gpudeck campaign failed ({out.returncode}):\n{out.stderr[-3000:]}")
    doc = json.loads(out.stdout)
    rows, bad = {}, None
    for cell in doc["cells"]:
        if cell["name"] == "smol-vllm-bad-len":
            bad = cell
            continue
        levels = cell["rounds"][-1]["levels"] if cell.get("rounds") else []
        rows[label({k: int(v) for k, v in (cell.get("flags") or {}).items()})] = levels[0] if levels else {}
    return {"rows": rows, "bad": bad}


def run_vllm_sweep(work: Path, rnd: int, args, dataset: Path, vllm: Path, model: Path, port: int,
                   env: dict) -> dict:
    """One `vllm bench sweep serve` round: every config started once, one measured run each."""
    from tests.vllm_part import serve_args

    params = work / f"serve-params-{rnd}.json"
    params.write_text(json.dumps([{k.lstrip("-").replace("-", "_"): v for k, v in c.items()} for c in combos(args)]))
    serve = shlex.join([str(vllm), *serve_args(model, port, *SERVE_EXTRA)])
    bench = shlex.join([str(vllm), "bench", "serve", "--backend", "openai", "--base-url", f"http://127.0.0.1:{port}",
                        "--endpoint", "/v1/completions", "--model", "smol", "--tokenizer", str(model),
                        "--dataset-name", "custom", "--dataset-path", str(dataset),
                        "--num-prompts", str(args.prompts), "--custom-output-len", str(args.output_len),
                        "--skip-chat-template", "--ignore-eos", "--max-concurrency", str(args.concurrency),
                        "--request-rate", "inf", "--num-warmups", "1", "--disable-tqdm"])
    out_dir = work / "vllm-sweep"
    done = subprocess.run([str(vllm), "bench", "sweep", "serve", "--serve-cmd", serve, "--bench-cmd", bench,
                           "--serve-params", str(params), "--num-runs", "1", "--server-ready-timeout", "420",
                           "-o", str(out_dir), "-e", f"round-{rnd}"],
                          env=env, capture_output=True, text=True, timeout=1800, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise SystemExit(f"vllm bench sweep serve failed ({done.returncode}):\n{(done.stdout + done.stderr)[-3000:]}")
    rows = {}
    for summary in (out_dir / f"round-{rnd}").glob("*/summary.json"):
        for run in json.loads(summary.read_text()):
            combo = {f"--{k.replace('_', '-')}": int(run[k]) for k in ("max_num_seqs", "max_num_batched_tokens")
                     if k in run}
            rows[label(combo)] = {key: run.get(vkey) for key, vkey in VLLM_KEYS.items()}
    return rows


def ranking(table: dict[str, list[dict]]) -> list[str]:
    med = {name: statistics.median(r["output_throughput"] for r in runs) for name, runs in table.items() if runs}
    return sorted(med, key=med.get, reverse=True)


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--seqs", type=lambda s: [int(x) for x in s.split(",")], default=[1, 2, 4])
    parser.add_argument("--batched-tokens", type=lambda s: [int(x) for x in s.split(",")], default=[])
    parser.add_argument("--concurrency", type=int, default=4)
    parser.add_argument("--prompts", type=int, default=8)
    parser.add_argument("--output-len", type=int, default=24)
    args = parser.parse_args()

    from tests.bench.vllm_parity import write_dataset
    from tests.realparts import free_port
    from tests.vllm_part import launch_script, private_env, vllm_assets

    vllm, model = vllm_assets()
    work = Path(tempfile.mkdtemp(prefix="gpudeck-vsweep-"))
    dataset = work / "prompts.jsonl"
    write_dataset(dataset, args.prompts, args.output_len)
    port = free_port()
    home = work / "home"
    env = {**os.environ, "GPUDECK_HOME": str(home)}
    scripts = work / "scripts"
    scripts.mkdir()
    for name, extra in (("smol-vllm", SERVE_EXTRA), ("smol-vllm-bad-len", (*SERVE_EXTRA, "--max-model-len", "1000000"))):
        (scripts / f"{name}.sh").write_text("#!/bin/sh\n" + launch_script(work / "private", port, *extra) + "\n")
        (scripts / f"{name}.sh").chmod(0o755)
    added = gpudeck("profiles", "add", "vsweep", "--local", "--scripts-dir", str(scripts),
                    "--log-dir", str(work / "logs"), env=env, timeout=60)
    if added.returncode != 0:
        raise SystemExit(added.stderr)
    vllm_env = {**os.environ, **private_env(work / "vllm-client")}

    names = [label(c) for c in combos(args)]
    results = {"gpudeck": {n: [] for n in names}, "vllm": {n: [] for n in names}}
    bad = None
    began = time.monotonic()
    for rnd, order in alternate(("gpudeck", "vllm"), args.rounds):
        for tool in order:
            t0 = time.monotonic()
            if tool == "gpudeck":
                got = run_campaign(work, rnd, args, dataset, env, with_failure=rnd == 0)
                rows, bad = got["rows"], bad or got["bad"]
            else:
                rows = run_vllm_sweep(work, rnd, args, dataset, vllm, model, port, vllm_env)
            for name in names:
                if rows.get(name, {}).get("output_throughput") is not None:
                    results[tool][name].append(rows[name])
            print(f"round {rnd + 1} {tool:<7} {time.monotonic() - t0:6.1f} s  "
                  + "  ".join(f"{n}: {rows.get(n, {}).get('output_throughput') or 'N/A'}" for n in names), flush=True)

    print(f"\ngrid {', '.join(names)}; {args.prompts} fixed prompts, output {args.output_len} tokens (ignore_eos), "
          f"concurrency {args.concurrency}, prefix caching off; {args.rounds} alternating rounds, each config "
          f"started afresh per round by each tool; median [min-max] of the rounds ({time.monotonic() - began:.0f} s)")
    ok = True
    ranks = {tool: ranking(table) for tool, table in results.items()}
    for tool in ranks:
        print(f"ranking by output tok/s, {tool:<7}: {' > '.join(ranks[tool]) or 'N/A'}")
    same = ranks["gpudeck"] == ranks["vllm"] and len(ranks["gpudeck"]) == len(names)
    ok &= same
    print(f"rankings {'agree' if same else 'DIFFER'}")
    print(f"\n{'config':<12} {'metric':<12} {'gpudeck campaign':>26} {'vllm bench sweep':>26} {'diff':>8} "
          f"{'spread':>8}  verdict")
    for name in names:
        for key, text in METRICS:
            cols = {tool: [float(r[key]) for r in results[tool][name] if r.get(key) is not None] for tool in results}
            if not cols["gpudeck"] or not cols["vllm"]:
                print(f"{name:<12} {text:<12} {'N/A':>26} {'N/A':>26}")
                ok = False
                continue
            g, v = statistics.median(cols["gpudeck"]), statistics.median(cols["vllm"])
            spread = max(max(vals) - min(vals) for vals in cols.values())
            within = abs(g - v) <= spread
            ok &= within
            show = lambda vals, m: f"{m:.2f} [{min(vals):.2f}-{max(vals):.2f}]"  # noqa: E731
            print(f"{name:<12} {text:<12} {show(cols['gpudeck'], g):>26} {show(cols['vllm'], v):>26} {g - v:>8.2f} "
                  f"{spread:>8.2f}  {'no significant difference' if within else 'OUTSIDE the spread'}")
    if bad is not None:
        good = bad.get("status") == "start-failed" and bad.get("crash_class") not in (None, "unknown", "healthy")
        ok &= good
        print(f"\nthe impossible --max-model-len cell: {bad.get('status')}, class {bad.get('crash_class')}"
              f" ({'right' if good else 'WRONG'}); note: {(bad.get('note') or '')[:160]}")
    print(f"\nfiles in {work}")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
