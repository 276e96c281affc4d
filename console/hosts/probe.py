"""`profiles check`: can we reach a host, how fast, and does it have GPUs?"""
from __future__ import annotations

import time
from dataclasses import asdict, dataclass

from profiles.profile import Profile

from ..gpus.errors import NOT_FOUND
from . import HostError, host_for, ssh_target


@dataclass
class CheckResult:
    profile: str
    target: str
    reachable: bool
    endpoint: str | None = None  # user@host:port after the ssh config, as every command resolves it
    latency_ms: float | None = None
    kernel: str | None = None
    nvidia_smi: str | None = None
    gpu_count: int | None = None
    gpu_note: str | None = None
    error_kind: str | None = None
    error: str | None = None

    def to_json(self) -> dict:
        return asdict(self)


async def check(profile: Profile) -> CheckResult:
    host = host_for(profile)
    result = CheckResult(profile=profile.name, target=profile.target, reachable=False)
    try:
        if not profile.is_local:
            target = ssh_target(profile)
            result.endpoint = f"{target.user + '@' if target.user else ''}{target.where}"
        started = time.monotonic()
        await host.connect()
        uname = await host.run(["uname", "-sr"], timeout=15)
        result.latency_ms = round((time.monotonic() - started) * 1000, 1)
        result.reachable = True
        result.kernel = uname.stdout.strip() or None
        which = await host.run(["sh", "-c", "command -v nvidia-smi"], timeout=15)
        if which.ok and which.stdout.strip():
            result.nvidia_smi = which.stdout.strip()
            listing = await host.run(["nvidia-smi", "-L"], timeout=30)
            if listing.ok:
                result.gpu_count = sum(1 for line in listing.stdout.splitlines() if line.startswith("GPU "))
            else:
                first = (listing.stderr or listing.stdout).strip().splitlines()
                result.gpu_note = first[0] if first else f"nvidia-smi exited {listing.returncode}"
        else:
            result.gpu_note = NOT_FOUND
    except HostError as exc:
        result.error_kind = exc.kind
        result.error = str(exc)
    finally:
        await host.close()
    return result
