"""Campaigns against real llama.cpp on this shared, noisy host: twins are told apart by nothing,
a config that serves one stream at a time loses to one that batches them.

Each test runs a short campaign (one level, few and short requests, interleaved repeats):
the point is the verdict, not the numbers.
"""
from __future__ import annotations

import json
import shlex

import pytest

from tests.cli import gpudeck
from tests.realparts import free_port, llama_server_binary, smollm_model
from tests.test_campaign import _kill_launched, _nothing_left_running


def _script(port: int, parallel: int) -> str:
    return ("#!/bin/sh\n"
            f"exec {shlex.quote(str(llama_server_binary()))} -m {shlex.quote(str(smollm_model()))} "
            f"--host 127.0.0.1 --port {port} -c 2048 -t 1 --parallel {parallel}\n")


@pytest.fixture
def box(tmp_path):
    scripts = tmp_path / "scripts"
    scripts.mkdir()
    assert gpudeck("profiles", "add", "noisy", "--local", "--scripts-dir", str(scripts),
                   "--log-dir", str(tmp_path / "logs"), timeout=240).returncode == 0
    yield tmp_path, scripts
    _kill_launched("noisy")


def _run(folder, configs: list[str], levels: str, prompts: int, output_len: int, repeats: int = 3,
         policy: str = "") -> dict:
    path = folder / "campaign.toml"
    path.write_text(f"[sweep]\nlevels = {levels}\ninput_len = 16\noutput_len = {output_len}\nnum_prompts = {prompts}\n"
                    f"repeats = {repeats}\n\n" + "".join(f'[[config]]\nname = "{c}"\n\n' for c in configs)
                    + "[policy]\nready_timeout_s = 90\ngpu_idle_timeout_s = 5\n" + policy)
    out = gpudeck("campaign", "run", str(path), "-p", "noisy", "--foreground", "--json", timeout=290)
    assert out.returncode == 0, out.stderr[-2000:]
    doc = json.loads(out.stdout)
    _nothing_left_running("noisy")
    return doc


def test_two_identical_configs_come_out_as_no_significant_difference(box):
    folder, scripts = box
    port = free_port()
    for name in ("twin_a", "twin_b"):
        (scripts / f"{name}.sh").write_text(_script(port, 1))
        (scripts / f"{name}.sh").chmod(0o755)
    # A 95% interval names twins apart one time in twenty by chance alone, and a sweep of four short
    # requests moves by about 10% from one run to the next here: as an operator would, the campaign
    # sets its minimum effect above that noise (a CI run once read twin_a +11.9%, CI +5.4 … +18.8%,
    # under the default 2%). Twins must still never come out apart by more than 15%.
    doc = _run(folder, ["twin_a", "twin_b"], "[1]", prompts=4, output_len=16, policy="min_effect = 15\n")
    comp = doc["comparison"]
    for cell in doc["cells"]:
        assert cell["status"] == "done" and len(cell["rounds"]) == 3, cell
        assert all(r["levels"][0]["samples"]["tokens"] for r in cell["rounds"])
        parts = (cell["note"] or "").split("; ")     # a cause met at every visit is said once
        assert len(parts) == len(set(parts)), cell["note"]
    assert comp["min_effect_pct"] == 15
    assert comp["winner"] is None and not comp["significant"], comp["verdict"]
    assert comp["verdict"].startswith("no significant difference between twin_")
    # the rounds were interleaved: A B, then B A, then A B
    order = sorted((r["started_at"], c["name"]) for c in doc["cells"] for r in c["rounds"])
    assert [name for _t, name in order] == ["twin_a", "twin_b", "twin_b", "twin_a", "twin_a", "twin_b"]
    shown = gpudeck("campaign", "show", doc["id"], "-p", "noisy", timeout=240)
    assert "no significant difference between twin_" in shown.stdout and "bootstrap" in shown.stdout
    assert "log scale" in shown.stdout     # the method is printed with the answer
    # a throughput or a latency is positive: no interval of any metric of any level goes below zero
    bounds = [(r["cell"], lv["concurrency"], m, e["ci"]) for r in comp["results"] for lv in r["levels"]
              for m, e in (lv.get("stats") or {}).items() if e.get("ci")]
    assert bounds and all(ci[0] >= 0 for *_w, ci in bounds), bounds
    assert comp["difference"]["ci"][0] > -100
    # llama.cpp's own count of the tokens it generated (its usage) agrees with the chunks received: no
    # repeat is invalid (console.campaign.validity)
    counts = [lv["token_counts"] for c in doc["cells"] for r in c["rounds"] for lv in r["levels"]]
    assert counts and all(t["server"] == t["client"] > 0 for t in counts), counts
    assert not any(lv.get("invalid") for r in comp["results"] for lv in r["levels"])


def _throttled(port: int) -> str:
    """The same server, stopped two thirds of the time: about half the throughput whatever the host's load
    (requests also spend time outside the server)."""
    return ("#!/bin/sh\n"
            f"{shlex.quote(str(llama_server_binary()))} -m {shlex.quote(str(smollm_model()))} "
            f"--host 127.0.0.1 --port {port} -c 2048 -t 1 --parallel 1 &\n"
            "pid=$!\n"
            "trap 'kill -CONT $pid; kill $pid; wait $pid; exit 0' TERM INT\n"
            "while kill -0 $pid 2>/dev/null; do kill -STOP $pid; sleep 0.1; kill -CONT $pid; sleep 0.05; done\n")


def test_a_config_at_half_the_speed_loses_with_a_winner_named(box):
    folder, scripts = box
    port = free_port()
    (scripts / "full.sh").write_text(_script(port, 1))
    (scripts / "half.sh").write_text(_throttled(port))
    for name in ("full", "half"):
        (scripts / f"{name}.sh").chmod(0o755)
    # five repeats: on a host this loaded one round can run at half the speed of the next, and with
    # three repeats Student's t (4.3) leaves even a 2x difference inside the noise now and then
    doc = _run(folder, ["half", "full"], "[1]", prompts=4, output_len=16, repeats=5)
    comp = doc["comparison"]
    assert comp["winner"] == "full", comp["verdict"]
    assert comp["difference"]["ci"][0] > comp["min_effect_pct"]
    assert comp["verdict"].startswith("winner: full at ")
    shown = json.loads(gpudeck("campaign", "show", doc["id"], "-p", "noisy", "--json", timeout=240).stdout)
    assert {p["config"] for p in shown["frontier"]["points"]} == {"half", "full"}
    assert shown["frontier"]["frontier"] == [{"config": "full", "concurrency": 1}]
