"""`gpudeck gpus -p HOST` over SSH against its peer, a raw `ssh HOST nvidia-smi --query-gpu=…`.

Starts the tests' throwaway sshd (tests/realparts.py) and a profile that
reaches it; where the machine has no nvidia-smi, both sides run the tests'
stand-in (tests/fixtures/nvidia-smi/standin.py replaying a real 8-GPU sample),
so the peer pays the same remote start as gpudeck. Each round runs the peer
and gpudeck once, in alternating order, as fresh processes; the figure is the
ratio of their medians, with the load average.

    .venv/bin/python tests/bench/gpus_ssh.py [--runs 7] [--ticks ticks-busy-8x.csv] [--base CHECKOUT] [--cold]
                                             [--smi-start-ms N]

`--base` runs another checkout's gpudeck in the same rounds (before/after). Each checkout's
bytecode is compiled once first, as an installed gpudeck has it; `--cold` skips that (with
PYTHONDONTWRITEBYTECODE=1 and no __pycache__, as on the VM the earlier figures came from, every
run then compiles gpudeck's own modules from source). `--smi-start-ms N` makes each stand-in run
wait N ms before it answers, as a real nvidia-smi waits on the driver without using a core (the
stand-in's own start is Python's, CPU-bound on a busy 2-core machine, unlike nvidia-smi's).

Figures (2-core VM shared with other jobs, 2026-12-01, median and range of 9 alternated runs;
"before" is --base at the commit before this work):

    bytecode compiled, two benches (load 4.0-4.6):
      raw ssh + the stand-in (the peer)   348-366 ms
      gpudeck gpus -p                      459-487 ms, 1.32-1.33x    before 480-535 ms, 1.38-1.46x
    --cold, two benches (load 3.7-4.6):
      the peer                             370-407 ms
      gpudeck gpus -p                      503-579 ms, 1.24-1.56x    before 592-780 ms, 1.46-2.11x
    (an earlier session, cold, load 3.5-4.0: 1327 ms -> 675 ms, the peer 411 ms)

Before, one call opened three sessions (a latency ping, the GPU stream, the process list),
each paying the login shell, and read three samples 200 ms apart; now it opens one (the
process list at the head of the GPU stream) and reads one sample unless a GPU is part-way to
the stale flag. The CLI registers only the command it runs (every command module's import
was about 20 ms), and asyncssh is imported without ctypes running the compiler and linker
to look for liboqs (console/hosts/ssh_import.py: 60-170 ms on a busy machine). What is left
beyond the peer is Python's start with asyncssh's imports (about 130 ms), the handshake in
Python, and the stand-in started twice (the process list, then the GPUs).

nvidia-smi answers one selective query per run, so the process list and the GPUs are two runs;
since 2026-12-02 they start together in the one session (console/gpus/one_shot.py) instead of
one after the other. Same VM, bytecode compiled, 9 alternated runs, "base" the commit before:

    the stand-in as is (its start is Python's, CPU-bound on 2 cores; load 0.4-0.8, two benches):
      the peer 307-325 ms · gpudeck gpus -p 407-422 ms, 1.30-1.33x · base 413-430 ms, 1.32-1.34x
    --smi-start-ms 100 (each run waits 100 ms on "the driver", as nvidia-smi does; load 0.7-0.8):
      the peer 414-425 ms · gpudeck gpus -p 511-515 ms, 1.21-1.24x · base 632-647 ms, 1.49-1.56x
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from tests.gpus_standin import standin_command  # noqa: E402
from tests.realparts import make_sshd  # noqa: E402

from _alternate import alternate, load_line, times_peer  # noqa: E402  (this script's folder)

QUERY = "--query-gpu=count,index,uuid,name,utilization.gpu,memory.used,memory.total"


def _profile(home: Path, sshd, smi: list[str]) -> None:
    env = dict(os.environ, GPUDECK_HOME=str(home))
    code = (
        "from profiles import store\n"
        "from profiles.atomic import write_atomic\n"
        "from profiles.paths import known_hosts_file\n"
        "from profiles.profile import profile_from_dict\n"
        "import json, sys\n"
        "a = json.loads(sys.argv[1])\n"
        "write_atomic(known_hosts_file(), open(a['known']).read())\n"
        "store.save(profile_from_dict('bench', {'transport': 'ssh', 'ssh': {'host': 'gpudeck-test',"
        " 'config_file': a['config'], 'connect_timeout_s': 5}, 'gpu': {'smi_command': a['smi']}}))\n")
    import json

    subprocess.run([sys.executable, "-c", code, json.dumps(
        {"known": str(sshd.known_hosts), "config": str(sshd.ssh_config), "smi": smi})],
        env=env, cwd=ROOT, check=True)


def _timed(argv: list[str], env: dict, cwd: Path) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, env=env, cwd=cwd, capture_output=True)
    took = time.perf_counter() - started
    if done.returncode != 0:
        raise SystemExit(f"{argv[:4]}… failed ({done.returncode}): {done.stderr.decode()[-400:]}")
    return took


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=7)
    ap.add_argument("--ticks", default="ticks-busy-8x.csv", help="the stand-in's sample file (tests/fixtures/nvidia-smi)")
    ap.add_argument("--base", help="another checkout, run in the same rounds")
    ap.add_argument("--smi-start-ms", type=int, default=0,
                    help="each stand-in run waits this long before answering (nvidia-smi waiting on the driver)")
    ap.add_argument("--cold", action="store_true",
                    help="do not compile the checkouts' bytecode first (with PYTHONDONTWRITEBYTECODE=1 and no "
                         "__pycache__ there, every run then compiles gpudeck's modules from source)")
    args = ap.parse_args()
    if not shutil.which("ssh"):
        raise SystemExit("the peer needs the OpenSSH client (apt-get install openssh-client)")
    base_dir = Path(tempfile.mkdtemp(prefix="gpudeck-gpus-ssh-"))
    sshd = make_sshd(base_dir / "sshd")
    sshd.start()
    try:
        real = shutil.which("nvidia-smi")
        start = ["--start-ms", str(args.smi_start_ms)] if args.smi_start_ms else []
        smi = ["nvidia-smi"] if real else standin_command(args.ticks, "apps-none.csv", *start)
        home = base_dir / "home"
        home.mkdir()
        _profile(home, sshd, [] if real else smi)
        env = dict(os.environ, GPUDECK_HOME=str(home))
        ssh = ["ssh", "-F", str(sshd.ssh_config), "-o", f"UserKnownHostsFile={sshd.known_hosts}",
               "-o", "StrictHostKeyChecking=yes", "-o", "BatchMode=yes", "gpudeck-test"]
        peer_argv = ssh + smi + [QUERY, "--format=csv,noheader,nounits"]
        trees = {"this checkout": ROOT}
        if args.base:
            trees["base"] = Path(args.base).resolve()
        figures: dict[str, list[float]] = {"peer": [], **{name: [] for name in trees}}
        loads: list[float] = []
        _timed(peer_argv, env, ROOT)                       # warm the page cache on both sides
        for tree in [] if args.cold else trees.values():   # each checkout's bytecode compiled, as installed
            warm = {k: v for k, v in env.items() if k != "PYTHONDONTWRITEBYTECODE"}
            _timed([sys.executable, "-m", "console", "gpus", "-p", "bench"], dict(warm, PYTHONPATH=str(tree)), tree)
        for _i, order in alternate(["peer", *trees], args.runs, loads):
            for name in order:
                if name == "peer":
                    figures["peer"].append(_timed(peer_argv, env, ROOT))
                else:
                    tree = trees[name]
                    figures[name].append(_timed([sys.executable, "-m", "console", "gpus", "-p", "bench"],
                                                dict(env, PYTHONPATH=str(tree)), tree))
        print(load_line(loads))
        waits = f", waiting {args.smi_start_ms} ms per run" if args.smi_start_ms and not real else ""
        print(f"nvidia-smi on the host: {'the real one' if real else 'the stand-in replaying ' + args.ticks}{waits}")
        for name, values in figures.items():
            label = "raw ssh + nvidia-smi (the peer)" if name == "peer" else f"gpudeck gpus -p [{name}]"
            print(f"{label}: median {statistics.median(values) * 1000:.0f} ms, min {min(values) * 1000:.0f} ms "
                  f"({args.runs} runs; {times_peer(values, figures['peer']):.2f}x the peer)")
    finally:
        sshd.stop()
        shutil.rmtree(base_dir, ignore_errors=True)


if __name__ == "__main__":
    main()
