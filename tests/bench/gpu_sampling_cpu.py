"""Console CPU while sampling 8 hosts x 8 GPUs at 1 Hz over loopback sshd.

Starts a throwaway sshd, saves 8 SSH profiles reaching it, each with the
nvidia-smi stand-in replaying 8 busy GPUs (and 8 compute processes) as its
[gpu] smi_command, runs a SamplerGroup for a warm-up and then a measured window,
and prints this process's CPU time over that window as % of one core.
The stand-ins and sshd run in other processes and are not counted.

    .venv/bin/python tests/bench/gpu_sampling_cpu.py [--seconds 60] [--hosts 8]
"""
from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


async def measure(hosts: int, seconds: float, warmup: float) -> None:
    from console.gpus import SamplerGroup, sampler_for
    from profiles.atomic import write_atomic
    from profiles.paths import known_hosts_file
    from profiles.profile import profile_from_dict
    from tests.gpus_standin import standin_command
    from tests.realparts import make_sshd

    base = Path(tempfile.mkdtemp(prefix="gpudeck-bench-"))
    os.environ["GPUDECK_HOME"] = str(base / "home")
    sshd = make_sshd(base / "sshd")
    sshd.start()
    try:
        write_atomic(known_hosts_file(), sshd.known_hosts.read_text())
        profiles = [profile_from_dict(f"box{i}", {
            "transport": "ssh",
            "ssh": {"host": "gpudeck-test", "config_file": str(sshd.ssh_config)},
            "gpu": {"sample_interval_ms": 1000,
                    "smi_command": standin_command("ticks-busy-8x.csv", "apps-busy-8x.csv")},
        }) for i in range(hosts)]
        fleet = SamplerGroup({p.name: sampler_for(p) for p in profiles})
        counts = {"warm": 0, "measured": 0}
        phase = "warm"
        cpu0 = wall0 = 0.0
        gen = fleet.updates()
        deadline = time.monotonic() + warmup
        try:
            async for _name, snap in gen:
                now = time.monotonic()
                if phase == "warm" and now >= deadline:
                    phase, cpu0, wall0 = "measured", time.process_time(), now
                    deadline = now + seconds
                elif phase == "measured" and now >= deadline:
                    break
                if snap.state == "ok" and not snap.sample_stale:
                    counts[phase] += 1
            cpu = time.process_time() - cpu0
            wall = time.monotonic() - wall0
        finally:
            await gen.aclose()
            await fleet.close()
        gpus = sum(len(s.gpus) for s in fleet.latest.values())
        print(f"hosts {hosts} · GPUs {gpus} · window {wall:.1f} s · samples {counts['measured']} "
              f"({counts['measured'] / wall:.2f}/s, expected {hosts:.0f}/s)")
        print(f"console CPU: {100 * cpu / wall:.2f}% of one core (goal <= 3%)")
    finally:
        sshd.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=60.0)
    parser.add_argument("--hosts", type=int, default=8)
    parser.add_argument("--warmup", type=float, default=8.0)
    args = parser.parse_args()
    asyncio.run(measure(args.hosts, args.seconds, args.warmup))


if __name__ == "__main__":
    main()
