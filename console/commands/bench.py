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
                   help="--out as gpudeck's document, or vLLM's benchmark result JSON (one file per level)")
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
    p.add_argument("--keep-going", action="store_true", help="run the remaining levels after a failed one")
    p.add_argument("--profile", "-p", dest="bench_profile", help="profile whose runs/ keeps the results")
    p.add_argument("--json", action="store_true", help="one JSON document on stdout")
    p.add_argument("--events", action="store_true", help="stream JSON-lines events on stdout")
    p.add_argument("--out", help="also write the JSON document to this file")
    p.add_argument("--list", action="store_true", help="list the profile's earlier runs")
    p.add_argument("--compare", nargs=2, metavar=("BASE", "OTHER"), help="compare two saved runs")
    p.set_defaults(func=handle)


def _positive(name: str, value: int | float | None) -> None:
    import math

    from console.commands.kit import CLIError

    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise CLIError(f"--{name} must be a finite number > 0, got {value}", 2)
    if value <= 0:
        raise CLIError(f"--{name} must be > 0, got {value}", 2)


def check_url(url: str) -> str:
    """An http(s)://HOST[:PORT][/PATH] URL, or a one-line error (exit 2)."""
    from urllib.parse import urlsplit

    from console.commands.kit import CLIError

    bad = f"bad --url {url!r}: expected http://HOST:PORT"
    if not url.startswith(("http://", "https://")) or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise CLIError(bad, 2)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise CLIError(f"{bad} ({exc})", 2) from None
    if not parts.hostname:
        raise CLIError(f"{bad} (no host)", 2)
    if port == 0:
        raise CLIError(f"{bad} (port 0)", 2)
    if parts.query or parts.fragment:
        raise CLIError(f"{bad} (no query or fragment)", 2)
    return url.rstrip("/")


def parse_rates(text: str) -> list[float]:
    import math

    from console.commands.kit import CLIError

    rates = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            rate = float(part)
        except ValueError:
            raise CLIError(f"bad --request-rate {text!r}: use numbers like 1,2,4 or inf", 2) from None
        if math.isnan(rate) or rate <= 0:
            raise CLIError(f"bad --request-rate {text!r}: rates must be > 0 (inf: all at once)", 2)
        rates.append(rate)
    if not rates:
        raise CLIError("--request-rate is empty", 2)
    _within_limits("request-rate", max(rates))
    _within_limits("levels", len(rates))
    return rates


def _out_path(text: str | None):
    from pathlib import Path

    from console.commands.kit import CLIError

    if not text:
        return None
    path = Path(text)
    if path.is_dir():
        raise CLIError(f"--out {text!r} is a directory: give a file name", 2)
    if not path.parent.is_dir():
        raise CLIError(f"--out {text!r}: no directory {str(path.parent)!r}", 2)
    return path


# Headers that say where a request goes and how its bytes are framed, or that only hop to the next
# peer: gpudeck's own HTTP client writes the ones it needs; a second one is a smuggling vector.
FRAMING_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
                   "te", "trailer", "upgrade", "expect", "proxy-authenticate"}


def _headers(args) -> dict[str, str]:
    import os

    from console.commands.kit import CLIError

    import re

    headers: dict[str, str] = {}
    for item in args.header:
        key, sep, value = item.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", key) or \
                any(ord(ch) < 32 and ch != "\t" or ord(ch) == 127 for ch in value):
            raise CLIError(f"bad --header {item!r}: use Name:value", 2)
        if key.lower() == "host":
            raise CLIError(f"--header {key}: the host comes from --url (gpudeck writes Host itself)", 2)
        if key.lower() in FRAMING_HEADERS:
            raise CLIError(f"--header {key}: a framing or hop-by-hop header; gpudeck's client writes its own, "
                           "and a second one would make the request mean two things", 2)
        if key.lower() in {k.lower() for k in headers}:
            raise CLIError(f"--header {key} is given twice", 2)
        headers[key] = value
    if args.api_key_env:
        key = os.environ.get(args.api_key_env)
        if not key:
            raise CLIError(f"--api-key-env {args.api_key_env}: that environment variable is not set", 2)
        if any(ch in key for ch in "\r\n"):
            raise CLIError(f"--api-key-env {args.api_key_env}: the key holds a line break", 2)
        headers["Authorization"] = f"Bearer {key}"
    return headers


class _NotFinite(ValueError):
    pass


def _not_finite(text: str):
    raise _NotFinite(text)


def _finite_float(text: str) -> float:
    import math

    value = float(text)
    if not math.isfinite(value):    # 1e999 reads as inf
        raise _NotFinite(text)
    return value


def parse_levels(text: str | None) -> list[int]:
    from console.commands.kit import CLIError

    if not text:
        raise CLIError("--concurrency is required, e.g. --concurrency 1,2,10", 2)
    try:
        levels = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise CLIError(f"bad --concurrency {text!r}: use comma-separated integers like 1,2,10", 2) from None
    if not levels or any(c <= 0 for c in levels):
        raise CLIError(f"bad --concurrency {text!r}: levels must be integers > 0", 2)
    _within_limits("concurrency", max(levels))
    _within_limits("levels", len(levels))
    return levels


def _within_limits(name: str, value) -> None:
    """One line (exit 2) for a value above console.bench.limits' cap."""
    from console.bench.limits import problem
    from console.commands.kit import CLIError

    why = problem(name, value)
    if why:
        raise CLIError(why, 2)


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
    profile = _profile_name(args)
    if args.list or args.compare:
        return _saved(args, profile)
    config = build_config(args, profile)
    from console.bench.loop import run

    return run(_sweep(config, args))  # on uvloop where installed: see console/bench/loop.py


def build_config(args, profile: str):
    """Every argument checked (one-line errors, exit 2) and turned into a BenchConfig."""
    import json
    import math
    import random

    from console.commands.kit import CLIError

    rates = parse_rates(args.request_rate) if args.request_rate else None
    if rates and args.concurrency:
        raise CLIError("--request-rate and --concurrency both set the levels: pick one "
                       "(cap an open loop with --max-concurrency)", 2)
    levels = parse_levels(args.concurrency) if not rates else []
    for name in ("input_len", "output_len", "num_prompts", "prompts_per_stream", "timeout", "stall_timeout",
                 "workers", "max_concurrency", "top_p"):
        _positive(name.replace("_", "-"), getattr(args, name))
    for name in ("input_len", "output_len", "num_prompts", "prompts_per_stream", "timeout", "stall_timeout",
                 "workers", "max_concurrency", "warmup", "shared_prefix_len"):
        _within_limits(name.replace("_", "-"), getattr(args, name))
    if math.isnan(args.burstiness) or args.burstiness <= 0:  # inf is allowed: evenly spaced requests
        raise CLIError(f"--burstiness must be > 0, got {args.burstiness}", 2)
    if args.warmup < 0:
        raise CLIError("--warmup must be >= 0", 2)
    if not math.isfinite(args.range_ratio) or not 0 <= args.range_ratio < 1:
        raise CLIError(f"--range-ratio must be in [0, 1), got {args.range_ratio}", 2)
    if args.temperature is not None and (not math.isfinite(args.temperature) or args.temperature < 0):
        raise CLIError(f"--temperature must be a finite number >= 0, got {args.temperature}", 2)
    if args.shared_prefix_len < 0 or args.shared_prefix_len > max(0, args.input_len - 2):
        raise CLIError(f"--shared-prefix-len must be in 0..{max(0, args.input_len - 2)} "
                       "(it leaves room for each prompt's unique start)", 2)
    if not rates and (args.max_concurrency or args.ramp_up or args.burstiness != 1.0):
        raise CLIError("--max-concurrency, --ramp-up and --burstiness shape an open loop: "
                       "they need --request-rate", 2)
    ramp = None
    if args.ramp_up:
        strategy, _, start = args.ramp_up.partition(":")
        if strategy not in ("linear", "exponential"):
            raise CLIError(f"bad --ramp-up {args.ramp_up!r}: linear or exponential, optionally :START_RPS", 2)
        try:
            start_rps = float(start) if start else 1.0
        except ValueError:
            raise CLIError(f"bad --ramp-up {args.ramp_up!r}: START_RPS is a number", 2) from None
        if not math.isfinite(start_rps) or start_rps <= 0:
            raise CLIError(f"bad --ramp-up {args.ramp_up!r}: START_RPS must be a finite number > 0", 2)
        if any(math.isinf(r) for r in rates):
            raise CLIError("--ramp-up needs finite --request-rate values", 2)
        ramp = (strategy, start_rps)
    extra_body = None
    if args.extra_body:
        try:
            extra_body = json.loads(args.extra_body, parse_constant=_not_finite, parse_float=_finite_float)
        except _NotFinite as exc:
            raise CLIError(f"bad --extra-body: {exc} is not a finite number (JSON has no NaN or Infinity)",
                           2) from None
        except (ValueError, RecursionError) as exc:
            raise CLIError(f"bad --extra-body: not JSON ({exc.args[0] if exc.args else exc})", 2) from None
        if not isinstance(extra_body, dict):
            raise CLIError("bad --extra-body: a JSON object, e.g. '{\"top_k\": 20}'", 2)
    dataset_format = "random"
    if args.dataset:
        from pathlib import Path

        if not Path(args.dataset).is_file():
            raise CLIError(f"--dataset {args.dataset!r}: no such file", 2)
        dataset_format = args.dataset_format or ("jsonl" if args.dataset.endswith(".jsonl") else "sharegpt")
        from console.bench.workload import load_dataset

        try:
            items = load_dataset(args.dataset, dataset_format)
        except ValueError as exc:
            raise CLIError(str(exc), 2) from None
        if args.api == "completions" and dataset_format == "jsonl" and \
                any(isinstance(item.prompt, list) for item in items):
            raise CLIError(f"--dataset {args.dataset!r} holds chat messages: use --api chat", 2)
        del items   # the sweep reads it again when it starts
    elif args.dataset_format:
        raise CLIError("--dataset-format needs --dataset FILE", 2)
    percentiles = None
    slo = {}
    from console.bench.metrics import parse_percentiles, parse_slo

    try:
        if args.percentiles:
            percentiles = parse_percentiles(args.percentiles)
        if args.slo:
            slo = parse_slo(args.slo)
    except ValueError as exc:
        raise CLIError(str(exc), 2) from None
    _out_path(args.out)
    headers = _headers(args)
    url = args.url or _profile_url(profile)
    if not url:
        raise CLIError("no --url given and the profile has no [server] url", 2)
    url = check_url(url)

    from console.bench.runner import BenchConfig

    config = BenchConfig(url=url, concurrency=levels, model=args.model,
                       input_len=args.input_len, output_len=args.output_len or 256,
                       num_prompts=args.num_prompts, prompts_per_stream=args.prompts_per_stream,
                       api=args.api, warmup=args.warmup,
                       keep_going=args.keep_going, slo=slo, timeout_s=args.timeout,
                       stall_s=args.stall_timeout,
                       seed=args.seed if args.seed is not None else random.SystemRandom().randrange(2**31),
                       profile=profile, workers=args.workers, tunnelled=args.tunnelled,
                       server_port=args.server_port,
                       server_url=check_url(args.server_url) if args.server_url else None, request_rates=rates, burstiness=args.burstiness,
                       ramp_up=ramp, max_concurrency=args.max_concurrency,
                       shared_prefix_len=args.shared_prefix_len, range_ratio=args.range_ratio,
                       dataset=args.dataset, dataset_format=dataset_format,
                       fixed_output_len=args.output_len is not None,
                       temperature=args.temperature, top_p=args.top_p, extra_body=extra_body,
                       headers=headers or None, api_key_env=args.api_key_env, percentiles=percentiles)
    _level_sizes_within_limits(config)
    return config


def _level_sizes_within_limits(config) -> None:
    """Each level's request count, and its prompts x input length, under console.bench.limits' caps."""
    from console.bench.limits import MAX_PROMPTS, level_problem
    from console.commands.kit import CLIError

    for c, rate in config.level_specs():
        n = config.level_size(c, rate)
        if n > MAX_PROMPTS:
            raise CLIError(f"{n:,} requests in one level is above gpudeck's limit of {MAX_PROMPTS:,} "
                           "(lower --prompts-per-stream or --num-prompts)", 2)
        why = None if config.dataset else level_problem(n + config.warmup, config.input_len)
        if why:
            raise CLIError(why, 2)


def _profile_url(profile: str) -> str | None:
    from profiles import store
    from profiles.profile import ProfileError

    try:
        return store.load(profile).server.url
    except (ProfileError, ValueError, OSError):
        return None


async def _tunnel(config):
    """A loopback URL of a remote (SSH) profile: forward a local port, as the TUI does.

    Returns the host to close afterwards, or None when no tunnel was needed.
    """
    from console.bench.endpoint import loopback_port, with_port
    from console.commands.kit import CLIError

    port = loopback_port(config.url)
    if config.tunnelled or port is None or config.profile == "local":
        return None
    from console.hosts import HostError
    from console.session import HostSession
    from profiles import store
    from profiles.profile import ProfileError

    try:
        session = HostSession.open(store.load(config.profile))
    except (ProfileError, ValueError, OSError) as exc:
        raise CLIError(f"profile {config.profile!r}: {exc}", 2) from None
    if not session.host.tunnelled:
        return None
    target = "127.0.0.1"
    if session.profile.is_slurm:  # the server runs on its job's head node, reached through the login node
        from console.slurm.launch import head_for_port

        target = head_for_port(config.profile, port) or target
    try:
        local = await session.host.forward_port(port, target)
    except (HostError, OSError, Exception) as exc:  # noqa: BLE001 - any SSH failure is one line
        await session.host.close()
        raise CLIError(f"cannot open an SSH tunnel to {config.url} on {config.profile}: {exc}", 1) from None
    config.server_url = config.server_url or config.url
    config.server_port = config.server_port or port
    config.url = with_port(config.url, local)
    config.tunnelled = True
    return session.host


async def _sweep(config, args) -> int:
    from console.bench import events
    from console.bench.results import RunStore
    from console.bench.runner import NotStarted, Sweep, exit_code

    host = await _tunnel(config)
    try:
        return await _sweep_through(config, args, events, RunStore, NotStarted, Sweep, exit_code, host)
    finally:
        if host is not None:
            await host.close()


async def _sweep_through(config, args, events, RunStore, NotStarted, Sweep, exit_code, host=None) -> int:
    import asyncio
    import os
    import signal
    import sys

    from console.commands.kit import CLIError

    emit = events.line_writer(sys.stdout) if args.events else events.discard
    try:
        store = RunStore(config.profile)
    except OSError as exc:
        raise CLIError(f"cannot create the run files: {exc.strerror or exc} ({exc.filename or ''})") from None
    link = None
    if config.tunnelled:  # through an SSH tunnel: tell a lost link from a dead server
        from console.bench.linkcheck import for_sweep

        link = await for_sweep(config.url, config.profile, config.server_port, host=host)
    from console.bench.redact import Redactor

    redactor = Redactor(config.headers)
    store.redact = redactor.text
    sweep = Sweep(config, emit=emit, store=store, link=link)
    loop = asyncio.get_running_loop()
    signals = {"n": 0}

    def on_signal(sig: int) -> None:
        # the first stops the sweep (what was measured is saved); a second one exits now
        signals["n"] += 1
        if signals["n"] > 1:
            os._exit(128 + sig)
        sweep.stop()

    for sig in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        loop.add_signal_handler(sig, on_signal, sig)
    shown = config.server_url or config.url
    if not args.events and not args.json:
        levels = ",".join(map(str, config.request_rates or config.concurrency))
        kind = "rates" if config.request_rates else "levels"
        via = f" (through an SSH tunnel on {config.profile})" if config.tunnelled else ""
        sys.stderr.write(f"gpudeck bench: sweep {store.run_id} against {shown}{via}, {kind} {levels}\n")
    try:
        doc = await sweep.run()
    except NotStarted as exc:
        store.discard()
        reason = redactor.text(str(exc))
        emit(events.make("error", level=None, message=f"not started: {reason}"))
        emit(events.make("run-end", status="not started", exit_code=4, path=None))
        sys.stderr.write(f"gpudeck bench: not started: {reason}\n")
        if args.json:
            from console.commands.kit import emit_json

            emit_json({"status": "not started", "reason": reason, "url": shown, "levels": []})
        return 4
    except Exception as exc:  # noqa: BLE001 - an I/O error or the sweep's own bug: one line, saved state kept
        unsaved = store.drop_if_unsaved()
        if isinstance(exc, OSError) and not isinstance(exc, ConnectionError):   # a full disk, say
            where = "nothing was saved" if unsaved else f"{store.path} keeps the levels saved before"
            message = f"cannot save the run: {exc.strerror or exc} ({where})"
        else:
            message = redactor.text(f"{type(exc).__name__}: {exc}")
        emit(events.make("error", level=None, message=message))
        emit(events.make("run-end", status="error", exit_code=1, path=None if unsaved else str(store.path)))
        sys.stderr.write(f"gpudeck: bench stopped: {message}\n")
        return 1
    finally:
        store.drop_if_unsaved()
        if link is not None:
            await link.close()
    code = exit_code(doc)
    if not args.no_suggest:
        _judge_efficiency(config.profile, store.run_id, doc)
    emit(events.make("run-end", status=doc["status"], exit_code=code, path=doc.get("path")))
    if args.out:
        try:
            _write_out(doc, args)
        except OSError as exc:
            sys.stderr.write(f"gpudeck bench: cannot write --out {args.out}: {exc.strerror or exc}\n")
            code = 1
    if args.json:
        from console.commands.kit import emit_json

        emit_json(doc)
    elif not args.events:
        sys.stdout.write(format_table(doc))
    return code


def _write_out(doc: dict, args) -> None:
    import json
    from pathlib import Path

    from profiles.atomic import write_atomic

    path = Path(args.out)
    if args.out_format != "vllm":
        write_atomic(path, json.dumps(doc, indent=2) + "\n", mode=0o644)
        return
    from console.bench.vllm_format import level_result, level_file

    levels = [lv for lv in doc["levels"] if lv.get("status") != "skipped"]
    for level in levels:
        target = path if len(levels) == 1 else level_file(path, level)
        write_atomic(target, json.dumps(level_result(doc, level), indent=2) + "\n", mode=0o644)


def _judge_efficiency(profile_name: str, run_id: str, doc: dict) -> None:
    """The saved run's efficiency against the roofline: one suggestion on the task board if it is low."""
    try:
        from console.commands.kit import load_profile
        from console.report import offer_run_efficiency

        offer_run_efficiency(load_profile(profile_name), run_id, doc)
    except Exception:  # noqa: BLE001 - a suggestion is a courtesy; it never fails a finished sweep
        pass


def _fmt(value, digits: int = 1) -> str:
    from ..fmt import UNKNOWN

    return UNKNOWN if value is None else f"{value:.{digits}f}"


def format_table(doc: dict) -> str:
    """The human-readable summary."""
    from console.safe_text import clean_line  # server error bodies are hostile text
    lines = [f"{doc.get('run_id')} · {doc['url']} · {doc.get('model') or 'N/A'} · "
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
        died = lv.get("server_died")
        if lv.get("server_stopped"):
            lines.append(f"       {clean_line(lv['server_stopped']['message'])}")
        elif died:
            lines.append(f"       server died: {clean_line(died['message'])}")
        elif lv.get("link_lost") and lv["status"] == "interrupted":
            lines.append(f"       interrupted (link lost): {clean_line(str(lv['link_lost'].get('message')))}")
        elif lv.get("server_stopping"):
            lines.append(f"       {clean_line(lv['server_stopping']['message'])}")
        elif lv.get("server_hung"):
            lines.append(f"       {clean_line(lv['server_hung']['message'])}")
        elif lv["errors"]:
            lines.append(f"       errors: {clean_line('; '.join(map(str, lv['errors'])))}")
        if lv.get("skipped_because"):
            lines.append(f"       skipped: {clean_line(lv['skipped_because'])}")
        if lv.get("stopped"):
            unsent = f" ({lv['not_sent']} not sent)" if lv.get("not_sent") else ""
            lines.append(f"       stopped by the operator{unsent}")
    lines.append(f"saved {doc.get('path')}")
    return "\n".join(lines) + "\n"


def _saved(args, profile: str) -> int:
    import sys

    from console.bench.results import compare_runs, list_runs, load_run
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
