"""A real two-node Slurm cluster on this one machine (Debian's `slurm-wlm` and `munge`).

- `munged` runs on its own socket and key in a temp dir; `slurm.conf` names
  that socket, so nothing under /etc is read or written.
- `slurmctld` and two `slurmd`, each `slurmd` under `unshare --uts --mount`
  with its own hostname (`n1`, `n2`) and a bind-mounted hosts file naming both,
  so `srun hostname` prints n1 and n2. Each node has its own `Port=`.
- Each node has four fake GPUs: dummy character devices (`mknod ... c 195 N`)
  listed with `File=` in gres.conf (count-only GPUs leave 22.05 nodes INVAL).
- Clients find the cluster through `SLURM_CONF`; every Slurm command here runs
  under `timeout` (sinfo hangs while slurmctld is down).

A missing binary is a test failure that says what to install, never a skip.
Run `python -m tests.slurm_part DIR` to start one by hand (Ctrl-C stops it).
"""
from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from tests.realparts import free_port
from tests.tiers import reaches

NODES = ("n1", "n2")
GPUS_PER_NODE = 4
_BINARIES = ("munged", "slurmctld", "slurmd", "sinfo", "sbatch", "squeue", "scontrol", "scancel", "srun", "unshare")


@reaches("slurm")
def slurm_binaries() -> dict[str, str]:
    """Every program the cluster needs, by name; a test failure naming the packages if one is missing."""
    found, missing = {}, []
    for name in _BINARIES:
        path = shutil.which(name) or next((f"{d}/{name}" for d in ("/usr/sbin", "/usr/bin")
                                          if os.access(f"{d}/{name}", os.X_OK)), None)
        if path:
            found[name] = path
        else:
            missing.append(name)
    if missing:
        pytest.fail(f"Slurm not found ({', '.join(missing)} missing): install it with "
                    "`apt-get install slurm-wlm munge` (tests/run.sh does this when run as root)", pytrace=False)
    if os.geteuid() != 0:
        pytest.fail("the Slurm test cluster runs slurmd as root (unshare, mknod): run the tests as root",
                    pytrace=False)
    return found


@dataclass
class SlurmCluster:
    """slurmctld, two slurmd and munged, all state in `dir`."""

    dir: Path
    procs: list[subprocess.Popen] = field(default_factory=list)
    ctl_port: int = 0
    node_ports: dict[str, int] = field(default_factory=dict)
    bins: dict[str, str] = field(default_factory=dict)

    @property
    def conf(self) -> Path:
        return self.dir / "slurm.conf"

    @property
    def env(self) -> dict[str, str]:
        """The environment a Slurm client needs to reach this cluster."""
        return {**os.environ, "SLURM_CONF": str(self.conf)}

    def start(self) -> "SlurmCluster":
        self.bins = slurm_binaries()
        self.dir.mkdir(parents=True, exist_ok=True)
        os.chmod(self.dir, 0o755)
        (self.dir / "log").mkdir(exist_ok=True)
        self._write_munge_key()
        self._start_munge()
        self._write_conf()
        self._start_ctld()
        for node in NODES:
            self._start_slurmd(node)
        self.wait_nodes_idle()
        return self

    # ---------------------------------------------------------------- munge

    def _write_munge_key(self) -> None:
        (self.dir / "munge").mkdir(mode=0o700, exist_ok=True)
        key = self.dir / "munge" / "munge.key"
        key.write_bytes(os.urandom(1024))
        os.chmod(key, 0o400)

    def _start_munge(self) -> None:
        m = self.dir / "munge"
        argv = [self.bins["munged"], "--foreground", "--force", f"--socket={m / 'munge.socket'}",
                f"--key-file={m / 'munge.key'}", f"--pid-file={m / 'munged.pid'}",
                f"--log-file={m / 'munged.log'}", f"--seed-file={m / 'munged.seed'}"]
        self._spawn("munged", argv)
        self._wait(lambda: (m / "munge.socket").exists(), 10, "munged did not create its socket", m / "munged.log")

    # ---------------------------------------------------------------- config

    def _write_conf(self) -> None:
        self.ctl_port = free_port()
        self.node_ports = {node: free_port() for node in NODES}
        d = self.dir
        for sub in ("state", "spool", "log", "dev", "jobs"):
            (d / sub).mkdir(exist_ok=True)
        os.chmod(d / "jobs", 0o1777)
        gres = []
        for node in NODES:
            (d / "dev" / node).mkdir(exist_ok=True)
            for i in range(GPUS_PER_NODE):
                dev = d / "dev" / node / f"nvidia{i}"
                if not dev.exists():
                    os.mknod(dev, 0o666 | 0o020000, os.makedev(195, i))
            gres.append(f"NodeName={node} Name=gpu File={d / 'dev' / node}/nvidia[0-{GPUS_PER_NODE - 1}]")
        (d / "gres.conf").write_text("\n".join(gres) + "\n")
        hostname = socket.gethostname()
        nodes = "\n".join(
            f"NodeName={n} NodeHostname={n} NodeAddr=127.0.0.1 Port={self.node_ports[n]} CPUs=4 "
            f"RealMemory=2000 Gres=gpu:{GPUS_PER_NODE} State=UNKNOWN" for n in NODES)
        (d / "slurm.conf").write_text(f"""\
ClusterName=gpudecktest
SlurmctldHost={hostname}(127.0.0.1)
SlurmctldPort={self.ctl_port}
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket={d / 'munge' / 'munge.socket'}
StateSaveLocation={d / 'state'}
SlurmdSpoolDir={d / 'spool'}/%n
SlurmctldPidFile={d / 'slurmctld.pid'}
SlurmdPidFile={d / 'spool'}/slurmd-%n.pid
SlurmctldLogFile={d / 'log' / 'slurmctld.log'}
SlurmdLogFile={d / 'log'}/slurmd-%n.log
SlurmctldDebug=info
SlurmdDebug=info
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/none
MpiDefault=none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
SchedulerParameters=batch_sched_delay=0,bf_interval=1,sched_min_interval=0
SlurmdParameters=config_overrides
ReturnToService=2
MinJobAge=600
KillWait=5
InactiveLimit=0
SlurmdTimeout=30
GresTypes=gpu
{nodes}
PartitionName=gpu Nodes={','.join(NODES)} Default=YES MaxTime=INFINITE State=UP
""")

    # ---------------------------------------------------------------- daemons

    def _spawn(self, name: str, argv: list[str]) -> subprocess.Popen:
        log = open(self.dir / "log" / f"{name}.out", "ab")
        proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                                env=self.env, start_new_session=True)
        self.procs.append(proc)
        return proc

    def _start_ctld(self) -> None:
        self._spawn("slurmctld", [self.bins["slurmctld"], "-D", "-c", "-f", str(self.conf)])

    def _start_slurmd(self, node: str) -> None:
        hosts = self.dir / f"hosts.{node}"
        hosts.write_text("127.0.0.1 localhost\n" + "".join(f"127.0.0.1 {n}\n" for n in NODES)
                         + f"127.0.0.1 {socket.gethostname()}\n")
        script = (f"hostname {node} && mount --bind {hosts} /etc/hosts && "
                  f"exec {self.bins['slurmd']} -D -N {node} -f {self.conf}")
        self._spawn(f"slurmd-{node}", [self.bins["unshare"], "--uts", "--mount", "sh", "-c", script])

    def run(self, *argv: str, timeout: float = 10.0, check: bool = True) -> subprocess.CompletedProcess:
        """A Slurm client command against this cluster, always under `timeout`."""
        proc = subprocess.run(["timeout", "-k", "2", str(timeout), *argv], env=self.env,
                              capture_output=True, text=True)
        if check and proc.returncode != 0:
            raise AssertionError(f"{' '.join(argv)} exited {proc.returncode}: {proc.stderr.strip()[-500:]}")
        return proc

    def wait_nodes_idle(self, timeout: float = 30.0) -> None:
        """Until both nodes answer and are idle (they start UNKNOWN, then register)."""
        last = ""

        def ready() -> bool:
            nonlocal last
            self._check_alive()
            out = self.run("sinfo", "-h", "-N", "-o", "%N %t", timeout=5, check=False)
            last = (out.stdout + out.stderr).strip()
            states = dict(line.split() for line in out.stdout.splitlines() if len(line.split()) == 2)
            return all(states.get(n) == "idle" for n in NODES)

        self._wait(ready, timeout, f"nodes not idle: {last!r}", self.dir / "log" / "slurmctld.log",
                   detail=lambda: last)

    def _check_alive(self) -> None:
        for proc in self.procs:
            if proc.poll() is not None:
                logs = "".join(p.read_text(errors="replace")[-800:] for p in sorted((self.dir / "log").glob("*")))
                raise AssertionError(f"{proc.args[0]} exited {proc.returncode}:\n{logs}")

    def _wait(self, test, timeout: float, message: str, log: Path | None = None, detail=None) -> None:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if test():
                return
            time.sleep(0.1)
        tail = log.read_text(errors="replace")[-1500:] if log and log.exists() else ""
        self.stop()
        pytest.fail(f"{message} {detail() if detail else ''}\n{tail}", pytrace=False)

    def wait_job(self, job_id: str, states: set[str], timeout: float = 30.0) -> dict[str, str]:
        """`scontrol show job` as key=value pairs once its JobState is in `states`."""
        fields: dict[str, str] = {}
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            out = self.run("scontrol", "show", "job", "-o", job_id, check=False)
            fields = dict(tok.split("=", 1) for tok in out.stdout.split() if "=" in tok)
            if fields.get("JobState") in states:
                return fields
            time.sleep(0.1)
        raise AssertionError(f"job {job_id} never reached {states}: {fields.get('JobState')}")

    def stop(self) -> None:
        """Cancel every job and wait for them to end, then TERM the daemons, KILL what is left,
        reap them, and KILL any process still carrying this cluster's SLURM_CONF (a job step
        orphaned by a slurmd that went first): nothing of the cluster outlives it."""
        if self.procs:
            self.run("scancel", "--full", "-u", "root", check=False, timeout=5)
            deadline = time.monotonic() + 20
            while time.monotonic() < deadline:
                out = self.run("squeue", "-h", "-o", "%i", timeout=5, check=False)
                if out.returncode != 0 or not out.stdout.strip():
                    break
                time.sleep(0.2)
        for proc in reversed(self.procs):
            if proc.poll() is None:
                try:
                    os.killpg(proc.pid, signal.SIGTERM)
                except ProcessLookupError:
                    pass
        for proc in reversed(self.procs):
            try:
                proc.wait(10)
            except subprocess.TimeoutExpired:
                try:
                    os.killpg(proc.pid, signal.SIGKILL)
                except ProcessLookupError:
                    pass
                proc.wait(5)
        self.procs.clear()
        for pid in self.leftovers():
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def leftovers(self) -> list[int]:
        """Live processes whose environment names this cluster's slurm.conf (slurmstepd, job
        processes): provably this cluster's, whoever their parent is now. Zombies are left out."""
        mark = f"SLURM_CONF={self.conf}".encode()
        found = []
        for env in Path("/proc").glob("[0-9]*/environ"):
            try:
                if mark not in env.read_bytes().split(b"\0"):
                    continue
                state = (env.parent / "stat").read_text().rsplit(")", 1)[1].split()[0]
            except (OSError, IndexError):
                continue
            if state != "Z" and int(env.parent.name) != os.getpid():
                found.append(int(env.parent.name))
        return found

if __name__ == "__main__":
    import sys

    signal.signal(signal.SIGTERM, signal.default_int_handler)  # `timeout` stops it as cleanly as Ctrl-C
    cluster = SlurmCluster(Path(sys.argv[1])).start()
    print(f"export SLURM_CONF={cluster.conf}", flush=True)
    try:
        signal.pause()
    except KeyboardInterrupt:
        pass
    finally:
        cluster.stop()
