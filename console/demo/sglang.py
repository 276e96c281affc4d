"""The demo's `sglang` command: sglang's flags in, the simulator out (SIMULATED).

Fault injection comes from the environment the launch script sets:
GPUDECK_SIM_CRASH_AT (concurrency) and GPUDECK_SIM_CRASH_KIND; tests may set
GPUDECK_SIM_STARTUP_S and GPUDECK_SIM_EFFICIENCY to run the campaign faster.
"""
from __future__ import annotations

import argparse
import os
import sys


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] == "serve":
        argv = argv[1:]
    parser = argparse.ArgumentParser(prog="sglang serve (SIMULATED)")
    parser.add_argument("--model-path", "--model")
    parser.add_argument("--tp", "--tp-size", "--tensor-parallel-size", dest="tp", type=int, default=1)
    parser.add_argument("--ep", "--ep-size", "--expert-parallel-size", dest="ep", type=int, default=1)
    parser.add_argument("--mem-fraction-static", type=float, default=0.85)
    parser.add_argument("--max-running-requests", type=int, default=512)
    parser.add_argument("--cuda-graph-max-bs", type=int)
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=30000)
    args, _ignored = parser.parse_known_args(argv)
    sim = ["sim", "serve", "--host", args.host, "--port", str(args.port), "--tp", str(args.tp),
           "--ep", str(args.ep), "--mem-fraction-static", str(args.mem_fraction_static),
           "--max-running-requests", str(args.max_running_requests)]
    if args.cuda_graph_max_bs:
        sim += ["--cuda-graph-max-bs", str(args.cuda_graph_max_bs)]
    sim += ["--noise", "0.02",   # a real host is never exact: the campaign must tell real differences from this
            "--eager-step-ms", "300"]   # ~80 layers of MoE kernels launched one by one, TP8 over PCIe
    if args.model_path:
        sim += ["--served-model-name", args.model_path]
    state_dir = os.environ.get("GPUDECK_SIM_STATE_DIR")
    if state_dir:
        sim += ["--state-dir", state_dir]
    if os.environ.get("GPUDECK_SIM_CRASH_AT"):
        sim += ["--crash-at-concurrency", os.environ["GPUDECK_SIM_CRASH_AT"],
                "--crash-kind", os.environ.get("GPUDECK_SIM_CRASH_KIND", "illegal-address")]
    for env, flag in (("GPUDECK_SIM_STARTUP_S", "--startup-s"), ("GPUDECK_SIM_EFFICIENCY", "--efficiency")):
        if os.environ.get(env):  # tests speed the simulated campaign up
            sim += [flag, os.environ[env]]
    from console.cli import main as gpudeck

    return gpudeck(sim)


if __name__ == "__main__":
    raise SystemExit(main())
