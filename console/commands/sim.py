"""`gpudeck sim serve` and `gpudeck sim nvidia-smi`: the simulated server and GPUs (SIMULATED)."""
from __future__ import annotations

import argparse
import sys
from pathlib import Path


def register(subparsers) -> None:
    parser = subparsers.add_parser("sim", help="simulated sglang server and nvidia-smi (SIMULATED, no GPU needed)",
                                   description="A simulated 8-GPU host: an sglang-like server timed by the "
                                               "roofline, and an nvidia-smi stand-in. Everything is labelled SIMULATED.")
    sub = parser.add_subparsers(dest="sim_command", metavar="SUBCOMMAND", required=True)

    serve = sub.add_parser("serve", help="run the simulated OpenAI-compatible server")
    serve.add_argument("--port", type=_port, default=30000)
    serve.add_argument("--host", default="127.0.0.1")
    model = serve.add_mutually_exclusive_group()
    model.add_argument("--model", default=None, help="a packaged model (default GLM-5-NVFP4)")
    model.add_argument("--model-config", type=Path, help="a Hugging Face config.json")
    serve.add_argument("--served-model-name", help="name in /v1/models (default: the model's)")
    serve.add_argument("--quant-config", type=Path, help="hf_quant_config.json (default: the packaged one)")
    serve.add_argument("--gpu", default="RTX PRO 6000 Blackwell")
    serve.add_argument("--count", type=int, default=8)
    serve.add_argument("--tp", type=int, default=None, help="tensor parallel size (default: --count)")
    serve.add_argument("--ep", type=int, default=1)
    serve.add_argument("--quant", help="quantisation format, e.g. nvfp4 (default: the quant config's)")
    serve.add_argument("--efficiency", type=float, default=None,
                       help="fraction of the ideal roofline (default 0.0322: the real session's 10.4 tok/s)")
    serve.add_argument("--step-overhead-ms", type=float, default=0.0,
                       help="fixed time added to every decode step, ms (default 0)")
    serve.add_argument("--crash-at-concurrency", type=int, default=None, metavar="N")
    serve.add_argument("--crash-kind", choices=["illegal-address", "oom", "nccl", "hang"], default=None)
    serve.add_argument("--startup-s", type=float, default=3.0)
    serve.add_argument("--log", type=Path, help="append the log here (default: stdout)")
    serve.add_argument("--state-dir", type=Path, help="where the nvidia-smi stand-in finds the GPU state")
    serve.add_argument("--mem-fraction", "--mem-fraction-static", dest="mem_fraction", type=float, default=0.85)
    serve.add_argument("--max-running-requests", type=int, default=512)
    serve.add_argument("--cuda-graph-max-bs", type=int,
                       help="decode steps of larger batches run eager, --eager-step-ms slower each")
    serve.add_argument("--eager-step-ms", type=float, default=100.0,
                       help="what one eager decode step costs over a CUDA-graphed one (default 100)")
    serve.add_argument("--noise", type=float, default=0.0,
                       help="relative spread of step times, per step and per launch (default 0: exact)")
    serve.add_argument("--context", type=int, default=4096, help="context length the roofline assumes")
    serve.add_argument("--seed", type=int, default=0)
    serve.set_defaults(func=_serve)

    smi = sub.add_parser("nvidia-smi", help="nvidia-smi stand-in for the simulated GPUs", add_help=False)
    smi.add_argument("--state-dir", type=Path)
    smi.add_argument("--gpu", default=None, help="GPU model when no server state exists")
    smi.add_argument("--count", type=int, default=None)
    smi.add_argument("--query-gpu")
    smi.add_argument("--query-compute-apps")
    smi.add_argument("--format", default="csv")
    smi.add_argument("-lms", "--loop-ms", dest="loop_ms", type=int)
    smi.add_argument("-l", "--loop", dest="loop_s", type=float)
    smi.add_argument("-L", "--list-gpus", dest="list_gpus", action="store_true")
    smi.add_argument("-i", "--id", dest="ids")
    smi.add_argument("--samples", type=int, help="stop after this many samples (for tests)")
    smi.add_argument("-h", "--help", action="store_true")
    smi.set_defaults(func=_nvidia_smi)

    dcgm = sub.add_parser("dcgm", help="simulated DCGM exporters, one /metrics port per simulated host")
    dcgm.add_argument("--hosts", type=_count, default=4, metavar="N")
    dcgm.add_argument("--gpus-per-host", type=_count, default=8, metavar="M")
    dcgm.add_argument("--gpu", default="RTX PRO 6000 Blackwell")
    dcgm.add_argument("--base-port", type=_port, default=0,
                      help="first port (host k listens on base+k; default: ports the OS picks)")
    dcgm.add_argument("--bind", default="127.0.0.1")
    dcgm.add_argument("--state-dir", type=Path, help="host k reads <dir>/host-kk/sim-state.json (default: a temp dir)")
    dcgm.add_argument("--xid", action="append", default=[], metavar="HOST:GPU:CODE",
                      help="GPU GPU of host HOST reports XID CODE (repeatable)")
    dcgm.set_defaults(func=_dcgm)


def _serve(args: argparse.Namespace) -> int:
    from console.commands.kit import CLIError
    from console.sim.config import DEFAULT_EFFICIENCY, DEFAULT_MODEL, SimConfig

    cfg = SimConfig(
        port=args.port, host=args.host, gpu=args.gpu, count=args.count,
        tp=args.tp if args.tp is not None else args.count, ep=args.ep, quant=args.quant,
        efficiency=DEFAULT_EFFICIENCY if args.efficiency is None else args.efficiency,
        step_overhead_ms=args.step_overhead_ms,
        crash_at_concurrency=args.crash_at_concurrency, crash_kind=args.crash_kind,
        startup_s=args.startup_s, log=args.log, state_dir=args.state_dir, mem_fraction=args.mem_fraction,
        max_running_requests=args.max_running_requests, context=args.context, seed=args.seed,
        cuda_graph_max_bs=args.cuda_graph_max_bs, eager_step_ms=args.eager_step_ms, noise=args.noise)
    if args.model_config is not None:
        cfg.model_config = args.model_config
        cfg.model = args.served_model_name or args.model_config.stem.replace(".config", "")
        cfg.quant_config = args.quant_config
    else:
        cfg.model = args.model or DEFAULT_MODEL
        cfg.quant_config = args.quant_config
    try:
        import asyncio

        from console.sim.server import SimServer

        cfg.resolve_files()
        if args.served_model_name:
            cfg.model = args.served_model_name
        server = SimServer(cfg)
    except (ValueError, OSError) as exc:
        raise CLIError(str(exc).splitlines()[0] if str(exc) else type(exc).__name__, 2) from None
    return asyncio.run(server.main())


_SMI_USAGE = ("SIMULATED nvidia-smi (gpudeck): supports --query-gpu=FIELDS, --query-compute-apps=FIELDS, "
              "--format=csv[,noheader][,nounits], -l SEC, -lms MS, -L, -i IDS and the default table.\n")


def _nvidia_smi(args: argparse.Namespace) -> int:
    from console.sim import nvidia_smi
    from console.sim.state import read_state

    if args.help:
        sys.stdout.write(_SMI_USAGE)
        return 0
    fmt = {part.strip() for part in (args.format or "csv").split(",")}
    if "csv" not in fmt:
        sys.stderr.write(f'"{args.format}" is not a valid format. Use csv.\n')
        return 2
    if args.query_gpu and args.query_compute_apps:
        sys.stderr.write("Only one of --query-gpu and --query-compute-apps may be given.\n")
        return 2
    mode = "list" if args.list_gpus else "gpu" if args.query_gpu else "apps" if args.query_compute_apps else "table"
    names = [n.strip() for n in (args.query_gpu or args.query_compute_apps or "").split(",") if n.strip()]
    indices = None
    if args.ids:
        try:
            indices = {int(i) for i in args.ids.split(",")}
        except ValueError:
            sys.stderr.write(f"Invalid device id: {args.ids}\n")
            return 2
    interval = args.loop_ms / 1000.0 if args.loop_ms else args.loop_s if args.loop_s else None

    def state():
        return read_state(args.state_dir, args.gpu, args.count)

    def write(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    try:
        nvidia_smi.run_loop(state, write, mode, names, "noheader" not in fmt, "nounits" in fmt, indices,
                            interval, args.samples)
    except nvidia_smi.QueryError as exc:
        sys.stderr.write(f"{exc}\n")
        return 2
    except (KeyboardInterrupt, BrokenPipeError):
        return 0
    return 0


def _dcgm(args: argparse.Namespace) -> int:
    import asyncio
    import tempfile

    from console.commands.kit import CLIError
    from console.sim import dcgm
    from console.sim.hardware import find_gpu

    try:
        find_gpu(args.gpu)
    except (KeyError, ValueError) as exc:
        raise CLIError(f"--gpu: {exc}") from None
    xids = []
    for text in args.xid:
        parts = text.split(":")
        if len(parts) != 3 or not all(p.isdigit() for p in parts):
            raise CLIError(f"--xid {text!r}: expected HOST:GPU:CODE, three whole numbers")
        xids.append(tuple(int(p) for p in parts))
    state_dir = args.state_dir or Path(tempfile.mkdtemp(prefix="gpudeck-dcgm-"))
    try:
        asyncio.run(dcgm.run(args.hosts, args.gpus_per_host, args.gpu, state_dir, args.base_port, xids, args.bind))
    except OSError as exc:
        raise CLIError(f"cannot listen: {exc.strerror or exc}") from None
    except KeyboardInterrupt:
        return 0
    return 0


def _count(text: str) -> int:
    import argparse

    if not text.isdigit() or not 0 < int(text) <= 4096:
        raise argparse.ArgumentTypeError(f"expected a whole number from 1 to 4096, got {text!r}")
    return int(text)


def _port(text: str) -> int:
    import argparse

    try:
        port = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a port: {text!r}") from None
    if not 0 <= port < 65536:
        raise argparse.ArgumentTypeError(f"port {port} is out of range 0-65535")
    return port
