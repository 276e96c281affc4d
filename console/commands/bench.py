"""`gpudeck bench`: a concurrency sweep against an OpenAI-compatible server."""
from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="run a concurrency sweep (vLLM-compatible metrics)",
        description="Stream fixed-length requests at each concurrency level and report TTFT, "
                    "TPOT, ITL, E2EL and throughput with vLLM's definitions. Exit 0 when every "
                    "level was ok, 3 when any level was partial, failed or skipped, 2 for bad arguments.")
    p.add_argument("--url", help="server base URL (default: the profile's [server] url)")
    p.add_argument("--model", help="model name (default: the first one /v1/models lists)")
    p.add_argument("--concurrency", help="levels, e.g. 1,2,10,64,256,512")
    p.add_argument("--input-len", type=int, default=1024, help="prompt tokens (default 1024)")
    p.add_argument("--output-len", type=int, default=256, help="output tokens, with ignore_eos (default 256)")
    p.add_argument("--num-prompts", type=int, help="requests per level (default max(8*c, 32))")
    p.add_argument("--prompts-per-stream", type=int, metavar="N",
                   help="requests per level = N x concurrency (instead of --num-prompts)")
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    p.add_argument("--warmup", type=int, default=1, help="untimed requests before each level (default 1)")
    p.add_argument("--timeout", type=float, help="per-request limit in seconds (default none)")
    p.add_argument("--stall-timeout", type=float, default=60.0,
                   help="fail a request after this many seconds without bytes (default 60)")
    p.add_argument("--slo", help="goodput SLOs in ms, e.g. ttft=500,tpot=50")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--workers", type=int, help="client processes per level (default: 1, or more at "
                   ">= 256 streams when the previous level showed client lag)")
    p.add_argument("--tunnelled", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--server-port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--keep-going", action="store_true", help="run the remaining levels after a failed one")
    p.add_argument("--profile", dest="bench_profile", help="profile whose runs/ keeps the results")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--events", action="store_true", help="stream JSON-lines events on stdout")
    p.add_argument("--out", help="also write the JSON document to this file")
    p.add_argument("--list", action="store_true", help="list the profile's earlier runs")
    p.add_argument("--compare", nargs=2, metavar=("BASE", "OTHER"), help="compare two saved runs")
    p.set_defaults(func=handle)


def _positive(name: str, value: int | float | None) -> None:
    from console.clikit import CLIError

    if value is not None and value <= 0:
        raise CLIError(f"--{name} must be > 0, got {value}", 2)


def parse_levels(text: str | None) -> list[int]:
    from console.clikit import CLIError

    if not text:
        raise CLIError("--concurrency is required, e.g. --concurrency 1,2,10", 2)
    try:
        levels = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise CLIError(f"bad --concurrency {text!r}: use comma-separated integers like 1,2,10", 2) from None
    if not levels or any(c <= 0 for c in levels):
        raise CLIError(f"bad --concurrency {text!r}: levels must be integers > 0", 2)
    return levels


def _profile_name(args) -> str:
    from console.clikit import CLIError
    from profiles import store

    name = args.bench_profile or args.profile or store.last_used()
    try:
        from profiles.paths import check_name

        check_name(name)
    except ValueError as exc:
        raise CLIError(str(exc), 2) from None
    if name != "local" and not store.exists(name):
        raise CLIError(f"no profile named {name!r}", 2)
    return name


def handle(args: argparse.Namespace) -> int:
    from console.clikit import CLIError

    if args.json and args.events:
        raise CLIError("--json and --events both want stdout: pick one", 2)
    profile = _profile_name(args)
    if args.list or args.compare:
        return _saved(args, profile)
    levels = parse_levels(args.concurrency)
    for name in ("input_len", "output_len", "num_prompts", "prompts_per_stream", "timeout", "stall_timeout",
                 "workers"):
        _positive(name.replace("_", "-"), getattr(args, name))
    if args.warmup < 0:
        raise CLIError("--warmup must be >= 0", 2)
    slo = {}
    if args.slo:
        from console.bench.metrics import parse_slo

        try:
            slo = parse_slo(args.slo)
        except ValueError as exc:
            raise CLIError(str(exc), 2) from None
    url = args.url or _profile_url(profile)
    if not url:
        raise CLIError("no --url given and the profile has no [server] url", 2)
    if not url.startswith(("http://", "https://")):
        raise CLIError(f"bad --url {url!r}: expected http://HOST:PORT", 2)

    from console.bench.runner import BenchConfig

    config = BenchConfig(url=url.rstrip("/"), concurrency=levels, model=args.model,
                         input_len=args.input_len, output_len=args.output_len,
                         num_prompts=args.num_prompts, prompts_per_stream=args.prompts_per_stream,
                         api=args.api, warmup=args.warmup,
                         keep_going=args.keep_going, slo=slo, timeout_s=args.timeout,
                         stall_s=args.stall_timeout, seed=args.seed, profile=profile,
                         workers=args.workers, tunnelled=args.tunnelled, server_port=args.server_port)
    from console.clikit import run_async

    return run_async(_sweep(config, args))


def _profile_url(profile: str) -> str | None:
    from profiles import store
    from profiles.profile import ProfileError

    try:
        return store.load(profile).server.url
    except (ProfileError, ValueError, OSError):
        return None


async def _sweep(config, args) -> int:
    import asyncio
    import signal
    import sys

    from console.bench import events
    from console.bench.results import RunStore
    from console.bench.runner import Sweep, exit_code

    emit = events.line_writer(sys.stdout) if args.events else events.discard
    store = RunStore(config.profile)
    sweep = Sweep(config, emit=emit, store=store)
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGINT, signal.SIGTERM):
        loop.add_signal_handler(sig, sweep.stop)
    if not args.events and not args.json:
        sys.stderr.write(f"gpudeck bench: sweep {store.run_id} against {config.url}, levels "
                         f"{','.join(map(str, config.concurrency))}\n")
    try:
        doc = await sweep.run()
    except Exception as exc:  # noqa: BLE001 - the sweep's own bug or an I/O error: one line, saved state kept
        emit(events.make("error", level=None, message=f"{type(exc).__name__}: {exc}"))
        emit(events.make("run-end", status="error", exit_code=1, path=str(store.path)))
        sys.stderr.write(f"gpudeck: bench stopped: {type(exc).__name__}: {exc}\n")
        return 1
    code = exit_code(doc)
    _judge_efficiency(config.profile, store.run_id, doc)
    emit(events.make("run-end", status=doc["status"], exit_code=code, path=doc.get("path")))
    if args.out:
        from profiles.atomic import write_atomic
        import json

        write_atomic(__import__("pathlib").Path(args.out), json.dumps(doc, indent=2) + "\n", mode=0o644)
    if args.json:
        from console.clikit import emit_json

        emit_json(doc)
    elif not args.events:
        sys.stdout.write(format_table(doc))
    return code


def _judge_efficiency(profile_name: str, run_id: str, doc: dict) -> None:
    """The saved run's efficiency against the roofline: one suggestion on the task board if it is low."""
    try:
        from console.clikit import load_profile
        from console.report import offer_run_efficiency

        offer_run_efficiency(load_profile(profile_name), run_id, doc)
    except Exception:  # noqa: BLE001 - a suggestion is a courtesy; it never fails a finished sweep
        pass


def _fmt(value, digits: int = 1) -> str:
    return "—" if value is None else f"{value:.{digits}f}"


def format_table(doc: dict) -> str:
    """The human-readable summary."""
    lines = [f"{doc.get('run_id')} · {doc['url']} · {doc.get('model') or 'N/A'} · "
             f"in {doc['workload']['input_len']}"
             f"{' (approx.)' if doc['workload'].get('input_len_method') == 'approximate' else ''}"
             f" / out {doc['workload']['output_len']} · ignore_eos",
             f"{'conc':>5}  {'status':<8} {'done/fail':>10} {'out tok/s':>10} {'TTFT p50/p99 ms':>17} "
             f"{'TPOT p50/p99 ms':>17} {'ITL p99':>8}  lag p99"]
    for lv in doc["levels"]:
        lines.append(
            f"{lv['concurrency']:>5}  {lv['status']:<8} {str(lv['completed']) + '/' + str(lv['failed']):>10} "
            f"{_fmt(lv['output_throughput'], 2):>10} "
            f"{_fmt(lv['ttft_ms']['median']) + ' / ' + _fmt(lv['ttft_ms']['p99']):>17} "
            f"{_fmt(lv['tpot_ms']['median']) + ' / ' + _fmt(lv['tpot_ms']['p99']):>17} "
            f"{_fmt(lv['itl_ms']['p99']):>8}  {_fmt((lv.get('client_lag_ms') or {}).get('p99'))}")
        died = lv.get("server_died")
        if died:
            lines.append(f"       server died: {died['message']}")
        elif lv["errors"]:
            lines.append(f"       errors: {'; '.join(lv['errors'])}")
        if lv.get("skipped_because"):
            lines.append(f"       skipped: {lv['skipped_because']}")
    lines.append(f"saved {doc.get('path')}")
    return "\n".join(lines) + "\n"


def _saved(args, profile: str) -> int:
    import sys

    from console.bench.results import compare_runs, list_runs, load_run
    from console.clikit import CLIError, emit_json
    from profiles.atomic import StateFileError

    if args.list:
        runs = list_runs(profile)
        if args.json:
            emit_json({"profile": profile, "runs": runs})
        else:
            for run in runs:
                sys.stdout.write(f"{run['run_id']}  {run['status'] or '?':<7} {run['url']}  "
                                 f"levels {','.join(map(str, run['levels']))}\n")
        return 0
    try:
        base, other = (load_run(ref, profile) for ref in args.compare)
    except StateFileError as exc:
        raise CLIError(str(exc), 2) from None
    rows = compare_runs(base, other)
    if args.json:
        emit_json({"base": base.get("run_id"), "other": other.get("run_id"), "levels": rows})
    else:
        for row in rows:
            sys.stdout.write(f"c={row['concurrency']}  {row['status'][0]} -> {row['status'][1]}\n")
            for name, m in row["metrics"].items():
                change = "" if m["change_pct"] is None else f"  {m['change_pct']:+.1f}%"
                sys.stdout.write(f"   {name:<20} {_fmt(m['base'], 2):>10} -> {_fmt(m['other'], 2):>10}{change}\n")
    return 0
