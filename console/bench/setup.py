"""A sweep's setup, checked and made a `BenchConfig`: the one judge of what a sweep may ask for.

`gpudeck bench` and the Bench tab's load generator (which runs `gpudeck bench`
as its own process) both start here, so a setup is refused with the same one
line wherever it came from. Each refusal is a `BadSetup` naming the option.
"""
from __future__ import annotations

import json
import math
import os
import random
import re
from pathlib import Path
from urllib.parse import urlsplit


class BadSetup(ValueError):
    """One line naming the option that cannot be used as given."""


def _positive(name: str, value: int | float | None) -> None:
    if value is None:
        return
    if isinstance(value, float) and not math.isfinite(value):
        raise BadSetup(f"--{name} must be a finite number > 0, got {value}")
    if value <= 0:
        raise BadSetup(f"--{name} must be > 0, got {value}")


def check_url(url: str) -> str:
    """An http(s)://HOST[:PORT][/PATH] URL without a trailing slash, or BadSetup."""
    bad = f"bad --url {url!r}: expected http://HOST:PORT"
    if not url.startswith(("http://", "https://")) or any(ch.isspace() or ord(ch) < 32 for ch in url):
        raise BadSetup(bad)
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError as exc:
        raise BadSetup(f"{bad} ({exc})") from None
    if not parts.hostname:
        raise BadSetup(f"{bad} (no host)")
    if port == 0:
        raise BadSetup(f"{bad} (port 0)")
    if parts.query or parts.fragment:
        raise BadSetup(f"{bad} (no query or fragment)")
    return url.rstrip("/")


def parse_rates(text: str) -> list[float]:
    rates = []
    for part in filter(None, (p.strip() for p in text.split(","))):
        try:
            rate = float(part)
        except ValueError:
            raise BadSetup(f"bad --request-rate {text!r}: use numbers like 1,2,4 or inf") from None
        if math.isnan(rate) or rate <= 0:
            raise BadSetup(f"bad --request-rate {text!r}: rates must be > 0 (inf: all at once)")
        rates.append(rate)
    if not rates:
        raise BadSetup("--request-rate is empty")
    _within_limits("request-rate", max(rates))
    _within_limits("levels", len(rates))
    return rates


def _out_path(text: str | None):
    """--out names a file in a directory that exists (checked before the sweep, not after it)."""
    if not text:
        return None
    path = Path(text)
    if path.is_dir():
        raise BadSetup(f"--out {text!r} is a directory: give a file name (levels go beside it, FILE-c64.json)")
    if not path.parent.is_dir():
        raise BadSetup(f"--out {text!r}: no directory {str(path.parent)!r}")
    return path


# Headers that say where a request goes and how its bytes are framed, or that only hop to the next
# peer: gpudeck's own HTTP client writes the ones it needs; a second one is a smuggling vector.
FRAMING_HEADERS = {"host", "content-length", "transfer-encoding", "connection", "keep-alive", "proxy-connection",
                   "te", "trailer", "upgrade", "expect", "proxy-authenticate"}


def headers_of(opts) -> dict[str, str]:
    headers: dict[str, str] = {}
    for item in opts.header:
        key, sep, value = item.partition(":")
        key, value = key.strip(), value.strip()
        if not sep or not re.fullmatch(r"[!#$%&'*+.^_`|~0-9A-Za-z-]+", key) or \
                any(ord(ch) < 32 and ch != "\t" or ord(ch) == 127 for ch in value):
            raise BadSetup(f"bad --header {item!r}: use Name:value")
        if key.lower() == "host":
            raise BadSetup(f"--header {key}: the host comes from --url (gpudeck writes Host itself)")
        if key.lower() in FRAMING_HEADERS:
            raise BadSetup(f"--header {key}: a framing or hop-by-hop header; gpudeck's client writes its own, "
                           "and a second one would make the request mean two things")
        if key.lower() in {k.lower() for k in headers}:
            raise BadSetup(f"--header {key} is given twice")
        headers[key] = value
    if opts.api_key_env:
        key = os.environ.get(opts.api_key_env)
        if not key:
            raise BadSetup(f"--api-key-env {opts.api_key_env}: that environment variable is not set")
        if any(ch in key for ch in "\r\n"):
            raise BadSetup(f"--api-key-env {opts.api_key_env}: the key holds a line break")
        headers["Authorization"] = f"Bearer {key}"
    return headers


class _NotFinite(ValueError):
    pass


def _not_finite(text: str):
    raise _NotFinite(text)


def _finite_float(text: str) -> float:
    value = float(text)
    if not math.isfinite(value):    # 1e999 reads as inf
        raise _NotFinite(text)
    return value


def parse_levels(text: str | None) -> list[int]:
    if not text:
        raise BadSetup("--concurrency is required, e.g. --concurrency 1,2,10")
    try:
        levels = [int(part) for part in text.replace(" ", "").split(",") if part]
    except ValueError:
        raise BadSetup(f"bad --concurrency {text!r}: use comma-separated integers like 1,2,10") from None
    if not levels or any(c <= 0 for c in levels):
        raise BadSetup(f"bad --concurrency {text!r}: levels must be integers > 0")
    _within_limits("concurrency", max(levels))
    _within_limits("levels", len(levels))
    return levels


def _within_limits(name: str, value) -> None:
    """BadSetup for a value above console.bench.limits' cap."""
    from .limits import problem

    why = problem(name, value)
    if why:
        raise BadSetup(why)


def build_config(opts, profile: str):
    """Every option checked (a BadSetup line for the first bad one) and turned into a BenchConfig.

    `opts` holds the options under their argparse names (`concurrency`, `request_rate`, ...).
    """
    rates = parse_rates(opts.request_rate) if opts.request_rate else None
    if rates and opts.concurrency:
        raise BadSetup("--request-rate and --concurrency both set the levels: pick one "
                       "(cap an open loop with --max-concurrency)")
    levels = parse_levels(opts.concurrency) if not rates else []
    for name in ("input_len", "output_len", "num_prompts", "prompts_per_stream", "timeout", "stall_timeout",
                 "workers", "max_concurrency", "top_p"):
        _positive(name.replace("_", "-"), getattr(opts, name))
    for name in ("input_len", "output_len", "num_prompts", "prompts_per_stream", "timeout", "stall_timeout",
                 "workers", "max_concurrency", "warmup", "shared_prefix_len"):
        _within_limits(name.replace("_", "-"), getattr(opts, name))
    if math.isnan(opts.burstiness) or opts.burstiness <= 0:  # inf is allowed: evenly spaced requests
        raise BadSetup(f"--burstiness must be > 0, got {opts.burstiness}")
    if opts.warmup < 0:
        raise BadSetup("--warmup must be >= 0")
    if not math.isfinite(opts.range_ratio) or not 0 <= opts.range_ratio < 1:
        raise BadSetup(f"--range-ratio must be in [0, 1), got {opts.range_ratio}")
    if opts.temperature is not None and (not math.isfinite(opts.temperature) or opts.temperature < 0):
        raise BadSetup(f"--temperature must be a finite number >= 0, got {opts.temperature}")
    if opts.shared_prefix_len < 0 or opts.shared_prefix_len > max(0, opts.input_len - 2):
        raise BadSetup(f"--shared-prefix-len must be in 0..{max(0, opts.input_len - 2)} "
                       "(it leaves room for each prompt's unique start)")
    if not rates and (opts.max_concurrency or opts.ramp_up or opts.burstiness != 1.0):
        raise BadSetup("--max-concurrency, --ramp-up and --burstiness shape an open loop: "
                       "they need --request-rate")
    ramp = None
    if opts.ramp_up:
        strategy, _, start = opts.ramp_up.partition(":")
        if strategy not in ("linear", "exponential"):
            raise BadSetup(f"bad --ramp-up {opts.ramp_up!r}: linear or exponential, optionally :START_RPS")
        try:
            start_rps = float(start) if start else 1.0
        except ValueError:
            raise BadSetup(f"bad --ramp-up {opts.ramp_up!r}: START_RPS is a number") from None
        if not math.isfinite(start_rps) or start_rps <= 0:
            raise BadSetup(f"bad --ramp-up {opts.ramp_up!r}: START_RPS must be a finite number > 0")
        if any(math.isinf(r) for r in rates):
            raise BadSetup("--ramp-up needs finite --request-rate values")
        ramp = (strategy, start_rps)
    extra_body = None
    if opts.extra_body:
        try:
            extra_body = json.loads(opts.extra_body, parse_constant=_not_finite, parse_float=_finite_float)
        except _NotFinite as exc:
            raise BadSetup(f"bad --extra-body: {exc} is not a finite number (JSON has no NaN or Infinity)") from None
        except (ValueError, RecursionError) as exc:
            raise BadSetup(f"bad --extra-body: not JSON ({exc.args[0] if exc.args else exc})") from None
        if not isinstance(extra_body, dict):
            raise BadSetup("bad --extra-body: a JSON object, e.g. '{\"top_k\": 20}'")
    dataset_format = "random"
    dataset = None
    if opts.dataset:
        if not Path(opts.dataset).is_file():
            raise BadSetup(f"--dataset {opts.dataset!r}: no such file")
        from .dataset import dataset_format as format_of, open_dataset

        dataset_format = format_of(opts.dataset, opts.dataset_format)

        try:
            dataset = open_dataset(opts.dataset, dataset_format)
        except ValueError as exc:
            raise BadSetup(str(exc)) from None
        if opts.api == "completions" and dataset.has_messages:
            raise BadSetup(f"--dataset {opts.dataset!r} holds chat messages: use --api chat")
    elif opts.dataset_format:
        raise BadSetup("--dataset-format needs --dataset FILE")
    percentiles = None
    slo = {}
    from .metrics import parse_percentiles, parse_slo

    try:
        if opts.percentiles:
            percentiles = parse_percentiles(opts.percentiles)
        if opts.slo:
            slo = parse_slo(opts.slo)
    except ValueError as exc:
        raise BadSetup(str(exc)) from None
    _out_path(opts.out)
    headers = headers_of(opts)
    from .route import default_url

    url = opts.url or default_url(profile, _configured_url(profile))
    if not url:
        raise BadSetup("no --url given, the profile has no [server] url and no server gpudeck launched is live")
    url = check_url(url)

    from .runner import BenchConfig

    config = BenchConfig(url=url, concurrency=levels, model=opts.model,
                       input_len=opts.input_len, output_len=opts.output_len or 256,
                       num_prompts=opts.num_prompts, prompts_per_stream=opts.prompts_per_stream,
                       api=opts.api, warmup=opts.warmup,
                       keep_going=opts.keep_going, slo=slo, timeout_s=opts.timeout,
                       stall_s=opts.stall_timeout,
                       seed=opts.seed if opts.seed is not None else random.SystemRandom().randrange(2**31),
                       profile=profile, workers=opts.workers, tunnelled=opts.tunnelled,
                       server_port=opts.server_port,
                       server_url=check_url(opts.server_url) if opts.server_url else None, request_rates=rates, burstiness=opts.burstiness,
                       ramp_up=ramp, max_concurrency=opts.max_concurrency,
                       shared_prefix_len=opts.shared_prefix_len, range_ratio=opts.range_ratio,
                       dataset=opts.dataset, dataset_format=dataset_format, dataset_checked=dataset,
                       fixed_output_len=opts.output_len is not None,
                       temperature=opts.temperature, top_p=opts.top_p, extra_body=extra_body,
                       headers=headers or None, api_key_env=opts.api_key_env, percentiles=percentiles,
                       gpu_sample=not getattr(opts, "no_gpu_sample", False),
                       gpu_idle_mib=getattr(opts, "gpu_idle_mib", 1024.0))
    _level_sizes_within_limits(config)
    return config


def _level_sizes_within_limits(config) -> None:
    """Each level's request count, and its prompts x input length, under console.bench.limits' caps."""
    from .limits import MAX_PROMPTS, level_problem

    for c, rate in config.level_specs():
        n = config.level_size(c, rate)
        if n > MAX_PROMPTS:
            raise BadSetup(f"{n:,} requests in one level is above gpudeck's limit of {MAX_PROMPTS:,} "
                           "(lower --prompts-per-stream or --num-prompts)")
        why = None if config.dataset else level_problem(n + config.warmup, config.input_len)
        if why:
            raise BadSetup(why)


def _configured_url(profile: str) -> str | None:
    """The profile's [server] url, if its file can be read."""
    from profiles import store
    from profiles.profile import ProfileError

    try:
        return store.load(profile).server.url
    except (ProfileError, ValueError, OSError):
        return None
