"""`gpudeck demo`: a simulated 8-GPU host that replays a real optimisation campaign.

Everything lives in a temp dir removed on exit: a GPUDECK_HOME with one
profile, `demo` (marked SIMULATED), three launch scripts, a task board seeded
with the campaign's plan, and a bin dir put first on PATH that holds
- `nvidia-smi`: the simulator's stand-in (8x RTX PRO 6000 Blackwell);
- `sglang`: runs the simulator with sglang's own flags, so the demo's
  scripts read exactly like real sglang launch scripts.
"""
from __future__ import annotations

import os
import re
import shlex
import shutil
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from ..free_port import free_port

DEMO_PORT_ENV = "GPUDECK_SIM_PORT"
PERMIT_NAME = "launch-permit"   # in the world's root: see Demo.permit

SCRIPTS = {
    "run_tp8_cds16.sh": ("TP8, CUDA graphs up to bs 16: the healthy baseline", "", "--mem-fraction-static 0.85"),
    "run_tp8_ep8_memsafe.sh": ("EP8 with memory-safe settings", "", "--mem-fraction-static 0.75"),
    "run_tp8_ep8_crash.sh": ("EP8 at full memory: dies with an illegal address at 256 streams",
                             "export GPUDECK_SIM_CRASH_AT=256\nexport GPUDECK_SIM_CRASH_KIND=illegal-address\n",
                             "--mem-fraction-static 0.85"),
}

# The campaign the demo ships: the three configs and a small grid, each swept until sure (2 to 5 times).
DEMO_CAMPAIGN = """\
# gpudeck demo campaign (SIMULATED): which config serves GLM-5-NVFP4 best on 8x RTX PRO 6000?
[sweep]
levels = [1, 10, 64, 256]
input_len = 128
output_len = 8
prompts_per_stream = 1
slo = { ttft_ms = 8000 }
repeats = 2          # at least twice, in interleaved rounds: a winner must beat the noise

[[config]]
name = "run_tp8_cds16"

[[config]]
name = "run_tp8_ep8_memsafe"

[[config]]
name = "run_tp8_ep8_crash"

[[grid]]
base = "run_tp8_cds16"
flags = { "--cuda-graph-max-bs" = [32, 64] }   # above it, each decode step runs eager (slower)

[policy]
ready_timeout_s = 120
on_crash = "continue"
gpu_idle_timeout_s = 30
precision = 0.10     # repeat a config until its deciding level's 95% CI is within ±10% ...
max_repeats = 5      # ... or five repeats: a steady config stops sooner, a noisy one gets more
"""

PLAN = [
    ("Complete theoretical max single-stream perf analysis", "high", "in_progress"),
    ("Check EP8 server status and rerun 256/512 benchmarks", "high", "pending"),
    ("Try flashinfer_cutedsl MoE backend", "medium", "pending"),
    ("Update findings with all new results", "low", "pending"),
]


# What `setup` points at the world in this process's environment; `Demo.close` puts each back.
WORLD_ENV = ("GPUDECK_HOME", "PATH", "GPUDECK_SIM_STATE_DIR")


@dataclass
class Demo:
    root: Path
    home: Path
    bin_dir: Path
    state_dir: Path
    port: int
    env_before: dict[str, str | None] = field(default_factory=dict)   # WORLD_ENV as it was before setup

    @property
    def permit(self) -> Path:
        """The world's launch permit (`console.servers.launch_permit`): while it exists, the
        demo's launches may start their servers; its path is also what proves a process the
        world's (`world_processes`)."""
        return self.root / PERMIT_NAME

    def stop(self) -> None:
        """Stop every simulator the demo launched, and any launch still starting, so nothing
        outlives the demo. Safe to call from a signal handler: plain system calls, no event loop.

        In this order: the permit is revoked, so no launch starts a server from now on (not one
        still in flight in the console or the driver, nor one between the wrapper's fork and
        its process group); the campaign driver is killed, so it launches nothing more; then
        every process that carries a launch mark and this world's permit is killed, with its
        group, until none is left. Nothing is signalled on the word of a pid or pgid file."""
        import signal

        from ..campaign.driver import signal_driver
        from ..servers import launch_permit
        from ..store import campaigns as campaign_state
        from . import world_processes

        launch_permit.revoke(self.permit)
        for campaign in campaign_state.read_campaigns("demo").records:
            try:
                signal_driver(campaign.driver_pid, campaign.driver_start, campaign.driver_token, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
        world_processes.end_servers(str(self.permit))

    def close(self, wait_s: float = 3.0) -> None:
        """Stop the simulators, then remove every trace.

        A launch wrapper writes `<log>.exit` once its server dies, a moment after the kill: a
        removal running meanwhile would miss that file and leave the folder behind. So the
        wrappers are given time to write it and end (those still running then are killed), and
        a late file is removed on a second pass."""
        import time

        from ..servers import launch_permit
        from . import world_processes

        self.stop()
        world_processes.end_wrappers(str(self.permit), wait_s)
        world_processes.end_servers(str(self.permit))   # none should be left: a last look
        for _ in range(int(wait_s / 0.1)):
            shutil.rmtree(self.root, ignore_errors=True)
            if not self.root.exists():
                break
            time.sleep(0.1)
        launch_permit.forget(self.permit)
        for name, value in self.env_before.items():   # nothing here points at the removed world now
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value

    def written(self) -> list[Path]:
        """What the operator made in the demo that a removal would lose: reports, for now."""
        from profiles.paths import profile_data_dir

        return sorted(p for p in profile_data_dir("demo").glob("*.md") if p.is_file())


SIM_COMMAND = re.compile(r"console\.demo\.sglang|\b(gpudeck|console) sim serve")


def simulated_process(command: str, port: int | None) -> bool:
    """Whether a process is one of this simulated host's servers: a simulator on the profile's port.

    A simulated host shows only its simulated processes, never a real server of
    the machine the demo runs on (another user's llama-server, another demo)."""
    if not SIM_COMMAND.search(command):
        return False
    return port is None or re.search(rf"--port[ =]{port}\b", command) is not None


def _write_exec(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def setup(root: Path | None = None, port: int | None = None) -> Demo:
    """Build the demo world and point this process's GPUDECK_HOME, PATH and the simulator's state folder
    at it, until `Demo.close`."""
    if root is None:  # removed on exit: its files need no fsync (profiles/atomic.py)
        root = Path(tempfile.mkdtemp(prefix="gpudeck-demo-"))
        from profiles.atomic import throwaway

        throwaway(root)
    root = Path(root)
    home, bin_dir, state_dir = root / "home", root / "bin", root / "state"
    scripts_dir, log_dir = root / "scripts", root / "logs"
    for folder in (home, bin_dir, state_dir, scripts_dir, log_dir):
        folder.mkdir(parents=True, exist_ok=True)
    port = port or free_port()
    env_before = {name: os.environ.get(name) for name in WORLD_ENV}
    os.environ["GPUDECK_HOME"] = str(home)
    os.environ["PATH"] = f"{bin_dir}{os.pathsep}{os.environ.get('PATH', '')}"
    os.environ["GPUDECK_SIM_STATE_DIR"] = str(state_dir)
    from ..servers import launch_permit

    launch_permit.grant(root / PERMIT_NAME)   # revoked first thing by Demo.stop

    python = shlex.quote(sys.executable)
    from ..sim.shim import install_shim

    install_shim(bin_dir, state_dir)
    _write_exec(bin_dir / "sglang",
                f"#!/bin/sh\n# SIMULATED sglang (gpudeck demo): the simulator with sglang's flags\n"
                f"exec {python} -m console.demo.sglang \"$@\"\n")

    for name, (comment, env, mem) in SCRIPTS.items():
        _write_exec(scripts_dir / name, (
            "#!/bin/sh\n"
            f"# {comment}\n"
            f"{env}"
            "sglang serve --model-path zai-org/GLM-5-NVFP4 \\\n"
            "  --tp 8 \\\n"
            f"  {mem} \\\n"
            "  --max-running-requests 512 \\\n"
            "  --cuda-graph-max-bs 16 \\\n"
            f"  --host 127.0.0.1 --port {port}\n"))

    from profiles import store
    from profiles.profile import profile_from_dict

    from ..sim import data as sim_data

    data_dir = Path(sim_data.__file__).parent
    profile = profile_from_dict("demo", {
        "transport": "local",
        "description": "SIMULATED 8x RTX PRO 6000 Blackwell, TP8, PCIe (gpudeck demo)",
        "server": {"url": f"http://127.0.0.1:{port}", "scripts_dir": str(scripts_dir), "log_dir": str(log_dir),
                   "kill_grace_s": 5.0},
        "model": {"name": "GLM-5-NVFP4", "config": str(data_dir / "GLM-5-NVFP4.config.json"),
                  "quant_config": str(data_dir / "GLM-5-NVFP4.hf_quant_config.json")},
        "gpu": {"name": "RTX PRO 6000 Blackwell", "count": 8},
        # small enough that the whole sweep, crash included, plays out in about a minute
        "bench": {"concurrency": "1,2,10,64,256,512", "input_len": 128, "output_len": 16, "num_prompts": "1c"},
        "ui": {"simulated": True},
    })
    store.save(profile)
    # inside the demo, PATH puts the nvidia-smi stand-in first: `local` shows simulated GPUs too
    store.save(profile_from_dict("local", {
        "transport": "local", "description": "SIMULATED inside gpudeck demo (the nvidia-smi stand-in)",
        "ui": {"simulated": True}}))
    store.set_last_used("demo")

    from ..store.campaigns import campaign_file

    path = campaign_file("demo")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(DEMO_CAMPAIGN)

    from ..store.task_board import TaskBoard

    board = TaskBoard.for_profile("demo")
    for text, priority, status in PLAN:
        board.add(text, priority=priority, status=status)
    return Demo(root=root, home=home, bin_dir=bin_dir, state_dir=state_dir, port=port, env_before=env_before)
