"""`gpudeck gpus -p HOST` over the real sshd: which nvidia-smi runs one call starts on the host.

nvidia-smi answers one selective query per run, so a reading with the
process list is two runs: `--query-compute-apps` and `--query-gpu`. The
call starts each exactly once (no probe, no retry) and both at the same
time in its one session, so the host pays one nvidia-smi start, not two in
a row. The stand-in is wrapped by a script that appends a line to a log for
each run; the process-list run waits (bounded) for the GPU run to begin and
writes down whether it did, so the test waits on that event, not on a clock.
"""
from __future__ import annotations

import json
import shlex
from pathlib import Path

from tests.cli import gpudeck
from tests.gpus_standin import FIXTURES, standin_command

ROOT = Path(__file__).resolve().parent.parent
WAIT_STEPS = 100   # x 0.05 s: how long the process-list run waits for the GPU run to start


def counting_smi(tmp_path: Path, *standin_args: str) -> tuple[list[str], Path]:
    """A `nvidia-smi` that logs each run (`apps start` / `gpus start`) before it replays the stand-in."""
    log = tmp_path / "smi-runs.log"
    script = tmp_path / "nvidia-smi"
    script.write_text(f"""#!/bin/sh
log={shlex.quote(str(log))}
case "$*" in
  *--query-compute-apps=*) kind=apps ;;
  *--query-gpu=*) kind=gpus ;;
  *) kind=other ;;
esac
echo "$kind start" >> "$log"
if [ "$kind" = apps ]; then
  i=0
  while [ $i -lt {WAIT_STEPS} ] && ! grep -q '^gpus start' "$log"; do sleep 0.05; i=$((i + 1)); done
  if grep -q '^gpus start' "$log"; then echo "apps saw the gpu run" >> "$log"; else echo "apps ran alone" >> "$log"; fi
fi
exec {shlex.join(standin_command(*standin_args))} "$@"
""")
    script.chmod(0o755)
    return [str(script)], log


def _use(profile, smi: list[str]) -> None:
    from profiles import store

    profile.gpu.smi_command = smi
    store.save(profile)


def test_one_call_starts_each_query_once_and_both_together(ssh_profile, tmp_path):
    smi, log = counting_smi(tmp_path, "ticks-busy-8x.csv", "apps-busy-8x.csv")
    _use(ssh_profile, smi)
    res = gpudeck("gpus", "-p", ssh_profile.name, "--json")
    assert res.returncode == 0, res.stderr
    doc = json.loads(res.stdout)
    runs = log.read_text().splitlines()
    assert sorted(line for line in runs if line.endswith(" start")) == ["apps start", "gpus start"]
    assert "apps saw the gpu run" in runs            # started together, not one after the other
    assert doc["state"] == "ok" and len(doc["gpus"]) == 8
    assert [p["gpu_index"] for p in doc["processes"]] == list(range(8))   # the list, tied to the GPUs
    gpu = doc["gpus"][0]
    for key in ("name", "utilization_gpu_pct", "memory_used_mib", "memory_total_mib", "temperature_c",
                "power_draw_w", "power_limit_w", "sm_clock_mhz", "pstate", "flags"):
        assert gpu[key] is not None, key


def test_the_table_still_shows_every_column_and_the_process_list(ssh_profile, tmp_path):
    smi, log = counting_smi(tmp_path, "ticks-busy-8x.csv", "apps-busy-8x.csv")
    _use(ssh_profile, smi)
    res = gpudeck("gpus", "-p", ssh_profile.name)
    assert res.returncode == 0, res.stderr
    head = next(line for line in res.stdout.splitlines() if line.lstrip().startswith("GPU"))
    assert head.split()[:9] == ["GPU", "Name", "Util", "Memory", "Temp", "Power", "SM", "MHz", "P"]
    assert res.stdout.count("sglang.launch_server") == 8
    assert sum(line.endswith(" start") for line in log.read_text().splitlines()) == 2


def test_an_error_nvidia_smi_prints_is_still_one_line_and_one_run_each(ssh_profile, tmp_path):
    smi, log = counting_smi(tmp_path, "ticks-busy-8x.csv", "apps-none.csv",
                            "--error", str(FIXTURES / "error-couldnt-communicate.txt"))
    _use(ssh_profile, smi)
    res = gpudeck("gpus", "-p", ssh_profile.name)
    assert res.returncode == 1
    assert res.stderr.count("\n") == 1 and "couldn't communicate with the NVIDIA driver" in res.stderr
    assert "Traceback" not in res.stderr
    runs = log.read_text().splitlines()
    assert sorted(line for line in runs if line.endswith(" start")) == ["apps start", "gpus start"]

