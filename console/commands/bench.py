"""`gpudeck bench`: a concurrency sweep against an OpenAI-compatible server."""
from __future__ import annotations

import argparse


def register(subparsers) -> None:
    p = subparsers.add_parser(
        "bench", help="run a concurrency sweep (vLLM-compatible metrics)",
        description="Stream fixed-length requests at each concurrency level and report TTFT, "
                    "TPOT, ITL, E2EL and throughput with vLLM's definitions. Exit 0 when every "
                    "level was ok, 3 when any level was partial, failed or skipped, 2 for bad arguments, "
                    "4 when the run could not start (the server does not answer /v1/models or does not "
                    "list the model).")
    p.add_argument("--url", help="server base URL (default: the profile's [server] url); a loopback URL "
                   "of a remote (SSH) profile goes through an SSH tunnel")
    p.add_argument("--model", help="model name (default: the first one /v1/models lists)")
    p.add_argument("--concurrency", help="levels, e.g. 1,2,10,64,256,512")
    p.add_argument("--input-len", type=int, default=1024, help="prompt tokens (default 1024)")
    p.add_argument("--output-len", type=int, help="output tokens, with ignore_eos (default 256; with a "
                   "dataset, given: every request, else the file's or the ShareGPT reply's length)")
    p.add_argument("--num-prompts", type=int, help="requests per level (default max(8*c, 32))")
    p.add_argument("--prompts-per-stream", type=int, metavar="N",
                   help="requests per level = N x concurrency (instead of --num-prompts)")
    p.add_argument("--request-rate", metavar="R[,R...]",
                   help="open loop: requests per second, one level per rate ('inf': all at once); "
                        "instead of --concurrency")
    p.add_argument("--burstiness", type=float, default=1.0,
                   help="open loop: gamma shape of the gaps between requests (1: Poisson; <1 burstier)")
    p.add_argument("--ramp-up", metavar="linear|exponential[:START_RPS]",
                   help="open loop: ramp the rate from START_RPS (default 1) up to the level's rate")
    p.add_argument("--max-concurrency", type=int, metavar="N",
                   help="open loop: at most N requests in flight; the wait is reported as queue time")
    p.add_argument("--dataset", metavar="FILE", help="prompts from a file (see --dataset-format)")
    p.add_argument("--dataset-format", choices=("jsonl", "sharegpt"), default=None,
                   help="jsonl: {prompt|messages, output_len} per line; sharegpt: a ShareGPT JSON list "
                        "(default: from the file name)")
    p.add_argument("--range-ratio", type=float, default=0.0,
                   help="random prompts: lengths uniform in len*(1-r)..len*(1+r) (default 0)")
    p.add_argument("--shared-prefix-len", type=int, default=0, metavar="N",
                   help="random prompts: the same first N tokens on every prompt (to measure prefix caching)")
    p.add_argument("--temperature", type=float, help="sampling temperature (default 0)")
    p.add_argument("--top-p", type=float, help="nucleus sampling top_p")
    p.add_argument("--extra-body", metavar="JSON", help="a JSON object merged into every request body")
    p.add_argument("--header", action="append", default=[], metavar="K:V", help="an extra HTTP header (repeat)")
    p.add_argument("--api-key-env", metavar="VAR",
                   help="send 'Authorization: Bearer' with the key in this environment variable (never saved)")
    p.add_argument("--percentiles", metavar="P,P",
                   help="extra percentiles for every latency, e.g. 50,90,95,99,99.9")
    p.add_argument("--format", dest="out_format", choices=("gpudeck", "vllm"), default="gpudeck",
                   help="--out as gpudeck's document, or vLLM's benchmark result JSON (with several levels, "
                        "one file per level beside FILE: FILE-c64.json, ...)")
    p.add_argument("--api", choices=("completions", "chat"), default="completions")
    p.add_argument("--warmup", type=int, default=1, help="untimed requests before each level (default 1)")
    p.add_argument("--timeout", type=float, help="per-request limit in seconds (default none)")
    p.add_argument("--stall-timeout", type=float, default=60.0,
                   help="fail a request after this many seconds without bytes (default 60)")
    p.add_argument("--slo", help="goodput SLOs in ms, e.g. ttft=500,tpot=50")
    p.add_argument("--seed", type=int, help="workload seed (default: a new one per run, saved with it)")
    p.add_argument("--workers", type=int, help="client processes per level (default: 1, or more at "
                   ">= 256 streams when the previous level showed client lag)")
    p.add_argument("--tunnelled", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--server-port", type=int, help=argparse.SUPPRESS)
    p.add_argument("--server-url", help=argparse.SUPPRESS)  # the server's own URL behind a tunnel
    # the caller judges the run itself (a campaign compares its cells): no efficiency suggestion per run
    p.add_argument("--no-suggest", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--no-gpu-sample", action="store_true",
                   help="do not sample the server's GPUs during the sweep (no energy figures, no GPU series)")
    p.add_argument("--gpu-idle-mib", type=float, default=1024.0, help=argparse.SUPPRESS)  # a campaign's idle mark
    p.add_argument("--keep-going", action="store_true", help="run the remaining levels after a failed one")
    p.add_argument("--profile", "-p", dest="bench_profile", help="profile whose runs/ keeps the results")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--events", action="store_true", help="stream JSON-lines events on stdout")
    p.add_argument("--out", metavar="FILE", help="also write the JSON document to FILE (a file name, not a "
                   "directory; --format vllm adds the level to the name: out-c64.json)")
    p.add_argument("--list", action="store_true", help="list the profile's earlier runs")
    p.add_argument("--compare", nargs=2, metavar=("BASE", "OTHER"), help="compare two saved runs")
    p.add_argument("--show", metavar="RUN", help="one saved run with its timeline (also: bench show RUN)")
    p.add_argument("verb", nargs="*", help=argparse.SUPPRESS)   # `show RUN`
    p.set_defaults(func=handle)


def _profile_name(args) -> str:
    from console.commands.kit import CLIError
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
    from console.commands.kit import CLIError

    if args.json and args.events:
        raise CLIError("--json and --events both want stdout: pick one", 2)
    if args.verb:
        if len(args.verb) != 2 or args.verb[0] != "show":
            raise CLIError(f"unexpected {' '.join(args.verb)!r}: did you mean `bench show RUN`?", 2)
        args.show = args.verb[1]
    profile = _profile_name(args)
    if args.show:
        return _show(args, profile)
    if args.list or args.compare:
        return _saved(args, profile)
    config = build_config(args, profile)
    from console.bench.loop import run

    return run(_sweep(config, args))  # on uvloop where installed: see console/bench/loop.py


def build_config(args, profile: str):
    """Every argument checked (console.bench.setup: one-line errors, exit 2) and made a BenchConfig."""
    from console.bench.setup import BadSetup, build_config as checked
    from console.commands.kit import CLIError

    try:
        return checked(args, profile)
    except BadSetup as exc:
        raise CLIError(str(exc), 2) from None


async def _sweep(config, args) -> int:
    import sys

    from console.bench import events
    from console.bench.job import run_sweep
    from console.bench.route import NotRun
    from console.commands.kit import CLIError, emit_json

    def announce(run_id: str, url: str) -> None:
        if not args.events and not args.json:
            levels = ",".join(map(str, config.request_rates or config.concurrency))
            kind = "rates" if config.request_rates else "levels"
            via = f" (through an SSH tunnel on {config.profile})" if config.tunnelled else ""
            sys.stderr.write(f"gpudeck bench: sweep {run_id} against {url}{via}, {kind} {levels}\n")

    emit = events.line_writer(sys.stdout) if args.events else events.discard
    try:
        end = await run_sweep(config, emit, announce, suggest=not args.no_suggest)
    except NotRun as exc:
        raise CLIError(str(exc), 2 if exc.usage else 1) from None
    if end.code == 4:
        sys.stderr.write(f"gpudeck bench: not started: {end.message}\n")
        if args.json:
            emit_json({"status": "not started", "reason": end.message, "url": end.url, "levels": []})
        return 4
    if end.doc is None:
        sys.stderr.write(f"gpudeck: bench stopped: {end.message}\n")
        return end.code
    code = end.code
    if args.out:
        from pathlib import Path

        from console.bench.vllm_format import write_out

        try:
            write_out(end.doc, Path(args.out), args.out_format)
        except OSError as exc:
            sys.stderr.write(f"gpudeck bench: cannot write --out {args.out}: {exc.strerror or exc}\n")
            code = 1
    if args.json:
        emit_json(end.doc)
    elif not args.events:
        sys.stdout.write(format_table(end.doc))
    return code


def _fmt(value, digits: int = 1) -> str:
    from ..fmt import UNKNOWN

    return UNKNOWN if value is None else f"{value:.{digits}f}"


def format_table(doc: dict) -> str:
    """The human-readable summary."""
    from console.bench.outcome import level_notes
    from console.safe_text import clean_line  # server error bodies are hostile text

    from console.fmt import UNKNOWN

    lines = [f"{doc.get('run_id')} · {doc['url']} · {doc.get('model') or UNKNOWN} · "
             f"in {doc['workload']['input_len']}"
             f"{' (approx.)' if doc['workload'].get('input_len_method') == 'approximate' else ''}"
             f" / out {doc['workload']['output_len']} · ignore_eos",
             f"{'conc':>5}  {'status':<8} {'done/fail':>10} {'out tok/s':>10} {'TTFT p50/p99 ms':>17} "
             f"{'TPOT p50/p99 ms':>17} {'ITL p99':>8}  lag p99"]
    for lv in doc["levels"]:
        name = lv.get("label") or str(lv["concurrency"])
        name = name.removeprefix("c=")
        lines.append(
            f"{name:>5}  {lv['status']:<8} {str(lv['completed']) + '/' + str(lv['failed']):>10} "
            f"{_fmt(lv['output_throughput'], 2):>10} "
            f"{_fmt(lv['ttft_ms']['median']) + ' / ' + _fmt(lv['ttft_ms']['p99']):>17} "
            f"{_fmt(lv['tpot_ms']['median']) + ' / ' + _fmt(lv['tpot_ms']['p99']):>17} "
            f"{_fmt(lv['itl_ms']['p99']):>8}  {_fmt((lv.get('client_lag_ms') or {}).get('p99'))}")
        lines += [f"       {clean_line(note)}" for note in level_notes(lv)]
    lines.append(f"saved {doc.get('path')}")
    return "\n".join(lines) + "\n"


def _saved(args, profile: str) -> int:
    import sys

    from console.bench.results import list_runs, load_run
    from console.commands.kit import CLIError, emit_json
    from profiles.atomic import StateFileError

    if args.list:
        runs = list_runs(profile)
        if args.json:
            emit_json({"profile": profile, "runs": runs})
        else:
            from console.store.runs import run_line

            for run in runs:
                sys.stdout.write(run_line(run) + "\n")
        return 0
    try:
        base, other = (load_run(ref, profile) for ref in args.compare)
    except StateFileError as exc:
        raise CLIError(str(exc), 2) from None
    from console.bench.compare import compare

    doc = compare(base, other, profile)  # A is the run that started first, whichever was named first
    rows = doc["levels"]
    if args.json:
        emit_json({"a": doc["a"], "b": doc["b"], "base": doc["a"], "other": doc["b"], "levels": rows})
    else:
        sys.stdout.write(f"A {doc['a']} → B {doc['b']}: each change is B against A\n")
        for row in rows:
            sys.stdout.write(f"c={row['concurrency']}  {row['status'][0]} → {row['status'][1]}\n")
            for name, m in row["metrics"].items():
                change = "" if m["change_pct"] is None else f"  {m['change_pct']:+.1f}%"
                mark = f"  {m['noise']}" if m.get("noise") else ""
                sys.stdout.write(f"   {name:<20} {_fmt(m['base'], 2):>10} → {_fmt(m['other'], 2):>10}{change}{mark}\n")
    return 0


def _show(args, profile: str) -> int:
    """One saved run: its levels (with their inferences) and its timeline; --json gives both whole."""
    import sys

    from console.commands.kit import CLIError, emit_json
    from console.store.runs import read_run
    from console.store.timeline import read_timeline
    from profiles.atomic import StateFileError

    try:
        run = read_run(args.show, profile)
        timeline = read_timeline(run.path)
    except StateFileError as exc:
        raise CLIError(str(exc), 2) from None
    if args.json:
        emit_json({"run": run.raw, "timeline": timeline.to_json() if timeline is not None else None})
        return 0
    sys.stdout.write(format_table(run.raw) + "\n")
    for i, level in enumerate(run.raw["levels"]):
        for note in level.get("notes") or [] if isinstance(level, dict) else []:
            sys.stdout.write(f"level {level.get('label') or i}: {note}\n")
    if timeline is None:
        sys.stdout.write("timeline: none recorded (a run from before timelines)\n")
    else:
        counts = ", ".join(f"{name} {len(points)}" for name, points in timeline.series.items())
        sys.stdout.write(f"timeline: {counts} points; {len(timeline.marks)} marks ({timeline.path})\n")
        clock = timeline.meta.get("clock")
        if isinstance(clock, dict):   # the GPU host's clock against this one's (console.hosts.clock_offset)
            sys.stdout.write(f"timeline: {clock_line(clock)}\n")
    return 0


def clock_line(clock: dict) -> str:
    """A saved clock offset as one line; the file's text, so every value is checked and cleaned."""
    from console.safe_text import clean_line

    host = clean_line(str(clock.get("host", "?")))[:80]
    offset, error = clock.get("offset_s"), clock.get("error_s")
    if isinstance(offset, (int, float)) and isinstance(error, (int, float)):
        return f"{host} clock {offset:+.3f} s ± {error * 1000:.0f} ms against this one's (samples stamped here)"
    return f"{host} clock offset unknown ({clean_line(str(clock.get('why', '')))[:200]})"
