"""`gpudeck server logs|flags|diff`: a server's log and its configs' flags, read and never changed."""
from __future__ import annotations

import json
import sys

from .kit import CLIError, emit_json, pick_launch, with_session


async def logs(args) -> int:
    from ..servers.logtail import LogTail, last_lines_argv

    if args.lines < 0:
        raise CLIError("-n/--lines takes a count of 0 or more", 2)

    async def body(session):
        record = pick_launch(session, args.target, live_only=False)
        if getattr(args, "rank", None) is not None:
            from ..slurm.launch import rank_log

            record.log = rank_log(record, args.rank)
            if record.log is None:
                raise CLIError(f"{record.config}: no log of rank {args.rank} (is it a Slurm job that ran srun?)")
        if not record.log:
            raise CLIError(f"{record.config}: log path unknown")
        if args.follow:
            from ..hosts import HostError
            from ..servers.logtail import follow_from

            try:
                start = await follow_from(session.host, record.log, args.lines)
            except HostError as exc:
                raise CLIError(f"cannot read {record.log}: {exc}") from None
            async for line in LogTail(session.host, record.log, start).lines(follow=True):
                print(json.dumps({"line": line}) if args.json else line, flush=True)
        else:
            result = await session.host.run(last_lines_argv(record.log, args.lines), timeout=30)
            if not result.ok:
                raise CLIError(result.stderr.strip() or f"cannot read {record.log}")
            if args.json:
                emit_json({"config": record.config, "log": record.log, "lines": result.stdout.splitlines()})
            else:
                sys.stdout.write(result.stdout)
        return 0

    return await with_session(args, body)


async def flags(args) -> int:
    from ..servers import configs as cfgs

    async def body(session):
        config = cfgs.find(await cfgs.discover(session), args.config)
        if config is None:
            raise CLIError(f"no config {args.config!r} on {session.name}")
        if args.json:
            emit_json(config.to_json())
        else:
            for key, value in config.flags.items():
                print(f"{key:<28} {value}")
            for warning in config.warnings:
                print(f"⚠ {warning}")
        return 0

    return await with_session(args, body)


async def diff(args) -> int:
    from ..servers import configs as cfgs
    from ..servers.launch import changed

    async def body(session):
        found = await cfgs.discover(session)
        a, b = cfgs.find(found, args.a), cfgs.find(found, args.b)
        for name, c in ((args.a, a), (args.b, b)):
            if c is None:
                raise CLIError(f"no config {name!r} on {session.name}")
        rows = [{"flag": r.key, "a": r.left, "b": r.right} for r in changed(a.flags, b.flags)]
        if args.json:
            emit_json({"a": a.name, "b": b.name, "differences": rows})
        else:
            print(f"{'flag':<28} {a.name:<24} {b.name}")
            for row in rows:
                print(f"{row['flag']:<28} {str(row['a']):<24} {row['b']}")
        return 0

    return await with_session(args, body)
