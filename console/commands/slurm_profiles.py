"""The Slurm side of `gpudeck profiles add|check`: a cluster reached through its login node."""
from __future__ import annotations

import argparse

from .kit import CLIError, emit_json, run_async


def add_arguments(add: argparse.ArgumentParser, how) -> None:
    add.add_argument("--slurm", action="store_true",
                     help="a Slurm cluster: --ssh names the login node (local without it); launches are jobs")
    add.add_argument("--partition", metavar="P", help="with --slurm: the partition (default: the cluster's)")
    add.add_argument("--account", metavar="A", help="with --slurm: the account jobs are charged to")
    add.add_argument("--dcgm", metavar="URL",
                     help="with --slurm: a Prometheus holding DCGM series of the same nodes (joined by host name)")


def section(args: argparse.Namespace) -> dict | None:
    """The [slurm] table for `profiles add`, or None when this is not a Slurm profile."""
    if not getattr(args, "slurm", False):
        for flag in ("partition", "account", "dcgm"):
            if getattr(args, flag, None) is not None:
                raise CLIError(f"--{flag} goes with --slurm", 2)
        return None
    if getattr(args, "prometheus", None):
        raise CLIError("--slurm takes --ssh LOGIN-NODE (or nothing, for this machine), not --prometheus", 2)
    if args.dcgm and not args.dcgm.startswith(("http://", "https://")):
        raise CLIError(f"--dcgm {args.dcgm!r}: expected an http:// or https:// URL", 2)
    values = {"enabled": True, "partition": args.partition, "account": args.account}
    return {k: v for k, v in values.items() if v is not None}


def check(profile, as_json: bool) -> int:
    """Does `sinfo` answer on the login node, and how many nodes and GPUs has the partition?"""
    from ..hosts import host_for
    from ..slurm.nodes import read_partition
    from ..slurm.run import SlurmError

    async def body():
        host = host_for(profile)
        try:
            return await read_partition(host, profile.slurm.partition)
        finally:
            await host.close()

    doc = {"profile": profile.name, "kind": "slurm", "partition": profile.slurm.partition, "target": profile.target}
    try:
        part = run_async(body())
    except SlurmError as exc:
        doc |= {"ok": False, "error": str(exc)}
        line = f"Slurm check failed: {exc}"
    else:
        states: dict[str, int] = {}
        for node in part.nodes:
            states[node.state] = states.get(node.state, 0) + 1
        doc |= {"ok": True, "nodes": len(part.nodes), "gpus_total": part.gpus_total,
                "gpus_used": part.gpus_used, "states": states}
        from ..fmt import UNKNOWN

        gpus = UNKNOWN if part.gpus_total is None else str(part.gpus_total)
        spread = ", ".join(f"{n} {s}" for s, n in sorted(states.items()))
        line = (f"sinfo answers · partition {profile.slurm.partition or '(default)'}: {len(part.nodes)} node(s) "
                f"({spread}) · {gpus} GPU(s)")
    if as_json:
        emit_json(doc)
    else:
        print(f"{profile.name}: {line}")
    return 0 if doc["ok"] else 1
