"""The Slurm side of `gpudeck server launch|stop` on a Slurm profile: a launch is a job."""
from __future__ import annotations

import sys

from .kit import CLIError, emit_json
from ..fmt import UNKNOWN


async def launch(session, config, args) -> int:
    """sbatch the config's script; with --wait, follow until every rank is ready or the job ended."""
    from ..servers.launching import LaunchError
    from ..slurm import launch as jobs

    try:
        record = await jobs.submit(session, config.name, config.script, config.flags, config.port)
    except LaunchError as exc:
        raise CLIError(str(exc)) from None
    print(f"submitted {config.name}: job {record.slurm['job_id']}, log {record.log}", file=sys.stderr)
    if args.wait:
        record = await jobs.follow(session, record, args.timeout)
        s = record.slurm
        if record.state == "ready":
            print(f"● ready in {record.time_to_ready_s}s on {','.join(s['nodes'])} "
                  f"({len(s['ranks']) or 1} rank(s))", file=sys.stderr)
        elif record.state == "crashed":
            where = f"rank {s['failed_rank']} on {s['failed_node']}" if s.get("failed_rank") is not None else "job"
            print(f"✖ crashed ({where}): {record.crash_class}", file=sys.stderr)
        else:
            print(f"not ready after {args.timeout:g}s (still {record.state}, Slurm {s['state']})", file=sys.stderr)
    if args.json:
        emit_json(record.to_json())
    if args.wait:
        return 0 if record.state == "ready" else 1
    return 1 if record.state == "crashed" else 0


async def stop(session, record, args) -> int:
    from ..servers.launching import LaunchError
    from ..slurm import launch as jobs

    try:
        result = await jobs.stop(session, record, args.grace, progress=lambda text: print(text, file=sys.stderr))
    except LaunchError as exc:
        raise CLIError(str(exc)) from None
    end = (record.slurm or {}).get("end") or {}
    if args.json:
        emit_json({"record": record.to_json(), **result.to_json()})
    else:
        print(f"stopped {record.config} (job {record.slurm['job_id']} {end.get('state', UNKNOWN)}, "
              f"{result.signal}, {result.seconds}s)")
    return 0
