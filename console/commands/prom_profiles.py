"""The Prometheus side of `gpudeck profiles add|check`: a fleet read from Prometheus and DCGM."""
from __future__ import annotations

import argparse

from .kit import CLIError, emit_json, run_async


def add_arguments(add: argparse.ArgumentParser, how) -> None:
    how.add_argument("--prometheus", metavar="URL",
                     help="a fleet read from this Prometheus (GPUs from NVIDIA's DCGM exporter series)")
    add.add_argument("--selector", help="label selector narrowing the fleet, e.g. '{cluster=\"a\"}'")
    add.add_argument("--bearer-token-env", metavar="VAR", help="read a bearer token from this environment variable")
    add.add_argument("--bearer-token-file", metavar="FILE", help="read a bearer token from this file")
    add.add_argument("--basic-user", metavar="USER", help="basic auth user (password from --basic-password-env)")
    add.add_argument("--basic-password-env", metavar="VAR", help="environment variable holding the basic auth password")
    add.add_argument("--dcgm-job", metavar="REGEX", help="job name(s) of the DCGM exporter targets (default .*dcgm.*)")
    add.add_argument("--scrape-interval", type=float, metavar="S",
                     help="scrape interval when the targets API does not say (default 15)")
    add.add_argument("--prom-timeout", type=float, metavar="S",
                     help="the most one request to Prometheus may take, whole (default 10)")
    add.add_argument("--max-answer-mb", type=float, metavar="MB",
                     help="refuse a larger answer from Prometheus (default 64)")


def section(args: argparse.Namespace) -> dict | None:
    """The [prometheus] table for `profiles add`, or None when this is not a Prometheus profile."""
    if not getattr(args, "prometheus", None):
        for flag in ("selector", "bearer_token_env", "bearer_token_file", "basic_user", "basic_password_env",
                     "dcgm_job", "scrape_interval", "prom_timeout", "max_answer_mb"):
            if getattr(args, flag, None) is not None:
                raise CLIError(f"--{flag.replace('_', '-')} goes with --prometheus", 2)
        return None
    if args.bearer_token_env and args.bearer_token_file:
        raise CLIError("give --bearer-token-env or --bearer-token-file, not both", 2)
    values = {"url": args.prometheus, "selector": args.selector, "bearer_token_env": args.bearer_token_env,
              "bearer_token_file": args.bearer_token_file, "basic_user": args.basic_user,
              "basic_password_env": args.basic_password_env, "dcgm_job": args.dcgm_job,
              "scrape_interval_s": args.scrape_interval, "timeout_s": args.prom_timeout,
              "max_answer_mb": args.max_answer_mb}
    return {k: v for k, v in values.items() if v is not None}


def settings_for(profile):
    """PromSettings from a profile's [prometheus] table."""
    from console.gpus.prometheus import PromSettings

    p = profile.prometheus
    extra = {k: v for k, v in {"dcgm_job": p.dcgm_job, "timeout_s": p.timeout_s}.items() if v}
    if p.max_answer_mb:
        extra["max_answer_bytes"] = int(p.max_answer_mb * (1 << 20))
    return PromSettings(url=p.url, selector=p.selector or "", bearer_token_env=p.bearer_token_env,
                        bearer_token_file=p.bearer_token_file, basic_user=p.basic_user,
                        basic_password_env=p.basic_password_env, scrape_interval_s=p.scrape_interval_s, **extra)


def check(profile, as_json: bool) -> int:
    from console.gpus.prometheus import PrometheusError, check as prom_check

    try:
        result = run_async(prom_check(settings_for(profile)))
    except PrometheusError as exc:
        result = None
        line, doc = str(exc), {"ok": False, "error": str(exc)}
    else:
        line, doc = result.line, result.doc
    if as_json:
        emit_json({"profile": profile.name, "kind": "prometheus", "url": profile.prometheus.url, **doc})
    else:
        print(f"{profile.name}: {line}")
    return 0 if doc.get("ok") else 1
