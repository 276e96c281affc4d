"""`gpudeck demo`: simulated worlds, every number in them marked SIMULATED.

- `host`    one simulated 8-GPU host replaying a real optimisation campaign (the default demo)
- `sglang`  the demo's `sglang` command: sglang's flags in, the simulator out
- `fleet`   `gpudeck demo --fleet`: 16 simulated hosts behind a real Prometheus
- `world_processes` the processes a world started, proven by their environment, ended on quit
"""
from __future__ import annotations

from .host import DEMO_CAMPAIGN, PLAN, SCRIPTS, WORLD_ENV, Demo, free_port, setup, simulated_process

__all__ = ["DEMO_CAMPAIGN", "PLAN", "SCRIPTS", "WORLD_ENV", "Demo", "free_port", "setup", "simulated_process"]
